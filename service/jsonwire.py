"""The canonical proto3 JSON mapping of our messages, fast.

``json_format.MessageToDict`` walks every field of every message in Python
and was the largest single cost of an HTTP move (a view holds every train's
tiles). Here ``ListFields()`` (C) yields only the fields that are set, which
is exactly the mapping's "empty fields omitted", and each field's converter
is chosen once per field descriptor. ``tests/test_jsonwire.py`` checks the
output equals ``MessageToDict`` on real games' views, events and responses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

_Convert = Callable[[Any], Any]
_CONVERTERS: dict[FieldDescriptor, tuple[str, _Convert, bool]] = {}
_INT64_TYPES: Final = frozenset(
    {
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_FIXED64,
        FieldDescriptor.TYPE_SFIXED64,
    }
)
_PLAIN_TYPES: Final = frozenset(
    {
        FieldDescriptor.TYPE_INT32,
        FieldDescriptor.TYPE_UINT32,
        FieldDescriptor.TYPE_SINT32,
        FieldDescriptor.TYPE_FIXED32,
        FieldDescriptor.TYPE_SFIXED32,
        FieldDescriptor.TYPE_BOOL,
        FieldDescriptor.TYPE_STRING,
    }
)


def _tile(tile: Any) -> dict[str, int]:
    # railyard.v1.Tile is most of a view (every train's tiles): written by hand.
    a, b = tile.a, tile.b
    if a and b:
        return {"a": a, "b": b}
    return {"a": a} if a else ({"b": b} if b else {})


_SPECIAL: Final[dict[str, _Convert]] = {"railyard.v1.Tile": _tile}


def _converter(field: FieldDescriptor) -> tuple[str, _Convert, bool] | None:
    """(JSON name, value converter, repeated) for ``field``, or None when the
    generic printer must handle it (maps, bytes, floats, well-known types)."""
    if field.message_type is not None:
        if field.message_type.GetOptions().map_entry:
            return None
        if field.message_type.full_name.startswith("google.protobuf."):
            return None
        convert: _Convert = _SPECIAL.get(field.message_type.full_name, to_dict)
    elif field.type == FieldDescriptor.TYPE_ENUM and field.enum_type is not None:
        names = {v.number: v.name for v in field.enum_type.values}

        def convert(value: Any, names: dict[int, str] = names) -> Any:
            return names.get(value, value)
    elif field.type in _INT64_TYPES:
        convert = str
    elif field.type in _PLAIN_TYPES:

        def convert(value: Any) -> Any:
            return value
    else:
        return None
    repeated = bool(field.is_repeated)
    return field.json_name, convert, repeated


def to_dict(message: Message) -> dict[str, Any]:
    """``message`` in the canonical JSON mapping, as ``MessageToDict`` gives it."""
    out: dict[str, Any] = {}
    for field, value in message.ListFields():
        entry = _CONVERTERS.get(field)
        if entry is None:
            found = _converter(field)
            if found is None:
                return json_format.MessageToDict(message)
            entry = _CONVERTERS[field] = found
        name, convert, repeated = entry
        out[name] = [convert(v) for v in value] if repeated else convert(value)
    return out
