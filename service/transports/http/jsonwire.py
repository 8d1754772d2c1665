"""The canonical proto3 JSON mapping of our messages, fast: the HTTP
transport's one encoder, for every answer and every watch event; and, on
input, what the mapping does not allow and ``json_format`` does not refuse
(:func:`check_input`).

``json_format.MessageToDict`` walks every field of every message in Python
and was the largest single cost of an HTTP move (a view holds every train's
tiles). Here ``ListFields()`` (C) yields only the fields that are set, which
is exactly the mapping's "empty fields omitted", each field's converter is
chosen once per field descriptor, and the JSON of the messages a game's
answers repeat unchanged (its ruleset, its trains) is looked up by their
bytes. ``tests/test_jsonwire.py`` and ``tests/test_convert_json.py`` check
the output equals ``MessageToDict`` on real games' views, events and
responses.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final, cast

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

from service.app import errors

_Convert = Callable[[Any], Any]
_WKT: Final = "google.protobuf"  # the package of the well-known types
_CONVERTERS: dict[FieldDescriptor, tuple[str, _Convert | None, bool]] = {}
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


def _timestamp(stamp: Any) -> str:
    # RFC 3339, as the mapping writes a Timestamp (GameView.turnDeadline).
    return str(stamp.ToJsonString())


_SPECIAL: Final[dict[str, _Convert]] = {
    "railyard.v1.Tile": _tile,
    "google.protobuf.Timestamp": _timestamp,
}

#: Message types whose JSON is looked up by their serialized bytes: a game's
#: answers repeat them unchanged (its ruleset in every view, each train until
#: a tile is played on it), and serializing one (C) costs a small part of
#: converting it field by field. The bytes determine the JSON (none of these
#: holds a map, the one thing serialized in no fixed order).
_MEMOIZED: Final = frozenset({"railyard.v1.Ruleset", "railyard.v1.TrainView"})
#: JSON objects kept per memoized type; past it the type's memo starts over.
_MEMO_SIZE: Final = 4096


class _EnumNames(dict[int, Any]):
    """An enum's value names by number; an unknown number is written as itself."""

    def __missing__(self, number: int) -> Any:
        return number


def _memoized(convert: _Convert) -> _Convert:
    """``convert`` remembering its answer per message bytes. The answers are
    shared between outputs: nothing may change a dict :func:`to_dict` returns
    (the HTTP transport only writes them out)."""
    memo: dict[bytes, Any] = {}

    def lookup(message: Any) -> Any:
        key = message.SerializeToString()
        found = memo.get(key)
        if found is None:
            if len(memo) >= _MEMO_SIZE:
                memo.clear()
            found = memo[key] = convert(message)
        return found

    return lookup


def _converter(field: FieldDescriptor) -> tuple[str, _Convert | None, bool] | None:
    """(JSON name, value converter or None for a value written as it is,
    repeated) for ``field``, or None when the generic printer must handle it
    (maps, bytes, floats, well-known types)."""
    convert: _Convert | None
    message = field.message_type
    if message is not None:
        if message.GetOptions().map_entry:
            return None
        if message.full_name.startswith("google.protobuf.") and message.full_name not in _SPECIAL:
            return None
        convert = _SPECIAL.get(message.full_name, to_dict)
        if message.full_name in _MEMOIZED:
            convert = _memoized(convert)
    elif field.type == FieldDescriptor.TYPE_ENUM and field.enum_type is not None:
        convert = _EnumNames({v.number: v.name for v in field.enum_type.values}).__getitem__
    elif field.type in _INT64_TYPES:
        convert = str
    elif field.type in _PLAIN_TYPES:
        convert = None
    else:
        return None
    return field.json_name, convert, bool(field.is_repeated)


def to_dict(message: Message) -> dict[str, Any]:
    """``message`` in the canonical JSON mapping, as ``MessageToDict`` gives it.
    Nested objects may be shared with earlier answers (:func:`_memoized`)."""
    out: dict[str, Any] = {}
    for field, value in message.ListFields():
        entry = _CONVERTERS.get(field)
        if entry is None:
            found = _converter(field)
            if found is None:
                return json_format.MessageToDict(message)
            entry = _CONVERTERS[field] = found
        name, convert, repeated = entry
        if convert is None:
            out[name] = list(value) if repeated else value
        else:
            out[name] = list(map(convert, value)) if repeated else convert(value)
    return out


# ------------------------------------------------------ on input: what json_format lets by

#: Per message: every key json_format accepts for a field (its JSON name and
#: its proto name) -> the field.
_FIELDS_BY_KEY: dict[Descriptor, dict[str, FieldDescriptor]] = {}


def _fields_by_key(descriptor: Descriptor) -> dict[str, FieldDescriptor]:
    found = _FIELDS_BY_KEY.get(descriptor)
    if found is None:
        found = {f.name: f for f in descriptor.fields} | {f.json_name: f for f in descriptor.fields}
        _FIELDS_BY_KEY[descriptor] = found
    return found


def _is_enum_value(enum: EnumDescriptor, value: Any) -> bool:
    if type(value) is str:
        return value in enum.values_by_name
    if type(value) is float and value.is_integer():
        value = int(value)  # 3.0 is the JSON number 3, as json_format reads integer fields
    return type(value) is int and value in enum.values_by_number  # a bool is not an int here


def check_input(data: Any, message: Message) -> None:
    """Refuse what canonical proto3 JSON does not allow in ``data`` (JSON for
    ``message``) and ``json_format.ParseDict`` would take:

    - an enum value other than the value's name or an integer that is one of
      its numbers (null: the default): ParseDict takes ``int()`` of anything
      else, so ``1.5``, ``true`` and ``"1"`` were all value 1, and keeps
      unknown numbers of an open enum;
    - a message that is not a JSON object (null: the default): ParseDict
      iterates the value as the object's keys, so ``[]`` and ``""`` were an
      empty message.

    INVALID_ARGUMENT, ``field`` naming it (``players[1].bot``). Everything
    else is left to ParseDict, which refuses it with a message of its own:
    unknown keys, and values of the wrong shape for a scalar or a list."""
    # The stubs type DESCRIPTOR as either descriptor class; at run time the
    # C (upb) one is the class descriptor.Descriptor names.
    _check_message(data, cast(Descriptor, message.DESCRIPTOR), "")


def _check_message(data: Any, descriptor: Descriptor, path: str) -> None:
    if type(data) is not dict or descriptor.file.package == _WKT:
        return  # not an object, or a well-known type with a JSON form of its own
    fields = _fields_by_key(descriptor)
    for key, value in data.items():
        field = fields.get(key)
        if field is None or value is None:
            continue
        where = f"{path}.{field.json_name}" if path else field.json_name
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            entry = field.message_type.fields_by_name["value"]
            if type(value) is dict:
                for name, item in value.items():
                    _check_value(entry, item, f"{where}[{json.dumps(name)}]")
        elif field.is_repeated:
            if type(value) is list:
                for index, item in enumerate(value):
                    _check_value(field, item, f"{where}[{index}]")
        else:
            _check_value(field, value, where)


def _check_value(field: FieldDescriptor, value: Any, where: str) -> None:
    """One value of ``field`` (one item of a repeated field, a map's value)."""
    message = field.message_type
    if message is not None:
        # (A well-known type has a JSON form of its own, not always an object.)
        if value is not None and type(value) is not dict and message.file.package != _WKT:
            raise errors.invalid(
                f"{where} must be a JSON object (a {message.name}), not {_shown(value)}",
                field=where,
            )
        _check_message(value, message, where)
    elif field.enum_type is not None and value is not None:
        enum = field.enum_type
        if enum.full_name == "google.protobuf.NullValue" or _is_enum_value(enum, value):
            return
        names = ", ".join(v.name for v in enum.values)
        raise errors.invalid(
            f"{where} must be one of {names} (or its number), not {_shown(value)}",
            field=where,
        )


def _shown(value: Any, limit: int = 40) -> str:
    """``value`` as JSON in a message, cut short: a body may hold a long one."""
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
