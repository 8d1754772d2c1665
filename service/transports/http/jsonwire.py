"""The canonical proto3 JSON mapping of our messages, fast: the HTTP
transport's one encoder, for every answer and every watch event; and, on
input, what the mapping does not allow and ``json_format`` does not refuse
(:func:`check_input`).

``json_format.MessageToDict`` walks every field of every message in Python,
choosing each one's conversion as it goes, and was the largest single cost
of an HTTP move (a view holds every train's tiles). Here each message type
gets its encoder made once from its descriptor (:func:`_encoder`): one
statement per field, written only when set (the mapping's "empty fields
omitted"). It reads a message, or the same message given as its fields
(railyard_api.fields: a view and a move's answer, which then never become
a message at all, their trains read from the engine's own values); the
JSON of what a game's answers repeat unchanged (its ruleset, each tile and
train reference) is remembered. ``tests/test_jsonwire.py`` and
``tests/test_convert_json.py`` check the output equals ``MessageToDict``
on real games' views, events and responses, and is the same bytes from
fields as from the message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Final, cast

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

from railyard_api.fields import ADAPTERS, SHARED, Fields, SharedMemo, attribute, lazily
from service.app import errors

_Convert = Callable[[Any], Any]
_WKT: Final = "google.protobuf"  # the package of the well-known types
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


def _tile_json(a: int, b: int) -> dict[str, int]:
    return {k: v for k, v in (("a", a), ("b", b)) if v}


#: The JSON of every tile a set can hold (halves up to 31), shared by every
#: answer (no one changes them): railyard.v1.Tile is most of a view (every
#: train's tiles), and a dict per tile per answer was most of its objects.
_TILES: Final = {(a, b): _tile_json(a, b) for a in range(32) for b in range(32)}


def _tile(tile: Any) -> dict[str, int]:
    """A Tile message, or its fields (railyard_api.fields)."""
    if type(tile) is dict:
        a, b = tile.get("a") or 0, tile.get("b") or 0
    else:
        a, b = tile.a, tile.b
    return _TILES.get((a, b)) or _tile_json(a, b)


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


#: What an encoder reads (:func:`_encoder`): a message, its fields dict
#: (railyard_api.fields), or an engine value whose attributes are named as
#: its fields (a view's trains).
_MESSAGE: Final = "message"
_FIELDS: Final = "fields"
_OBJECTS: Final = "objects"

#: Per shared message type, the JSON of its shared fields dicts.
_SHARED_JSON: dict[str, SharedMemo] = {}


def _shared_json(message: Descriptor, of_message: _Convert) -> SharedMemo:
    """The JSON of ``message``'s shared fields dicts (railyard_api.fields.share),
    made once; of a message, of a dict not shared or of an engine value,
    made each time."""
    found = _SHARED_JSON.get(message.full_name)
    if found is not None:
        return found
    of_fields = _SPECIAL.get(message.full_name) or _encoder(message, _FIELDS)

    def make(value: Any) -> Any:
        if type(value) is dict:
            return of_fields(value)
        if isinstance(value, Message):
            return of_message(value)
        if message.full_name in ADAPTERS:
            return memo.of_value(value)
        return _encoder(message, _OBJECTS)(value)

    memo = _SHARED_JSON[message.full_name] = SharedMemo(message.full_name, make)
    return memo


def _value(field: FieldDescriptor, names: dict[str, Any], mode: str) -> str | None:
    """The expression converting one value ``x`` of ``field`` to JSON (the
    names it uses put in ``names``), or None when the generic printer must
    handle the message (maps, bytes, floats, other well-known types).
    ``mode``: what ``x`` may be as well as a message (:data:`_FIELDS`: a
    fields dict or an engine value; :data:`_OBJECTS`: an engine value)."""
    message = field.message_type
    if message is not None:
        if message.GetOptions().map_entry:
            return None
        if message.full_name.startswith(_WKT + ".") and message.full_name not in _SPECIAL:
            return None
        tag = message.full_name.replace(".", "_")
        name = "_m_" + tag
        convert = _SPECIAL.get(message.full_name) or _encoder(message, _MESSAGE)
        if message.full_name in _MEMOIZED:
            convert = _memoized(convert)
        names[name] = convert
        if mode == _MESSAGE or message.full_name.startswith(_WKT + "."):
            return f"{name}(x)"  # (a well-known type is given as its message)
        if message.full_name in SHARED:
            memo = _shared_json(message, convert)
            if mode == _OBJECTS and message.full_name in ADAPTERS:  # (found by value, in C)
                names["_s_" + tag] = memo.of_value
                names["_s_many_" + tag] = memo.of_values
            else:
                names["_s_" + tag] = memo.get
                names["_s_many_" + tag] = memo.many
            return f"_s_{tag}(x)"
        names["_o_" + tag] = lazily(names, "_o_" + tag, lambda: _encoder(message, _OBJECTS))
        if mode == _OBJECTS:  # (an engine value holds engine values)
            return f"_o_{tag}(x)"
        names["_f_" + tag] = _SPECIAL.get(message.full_name) or _encoder(message, _FIELDS)
        names["Message"] = Message
        return (
            f"(_f_{tag}(x) if type(x) is dict else {name}(x) if isinstance(x, Message)"
            f" else _o_{tag}(x))"
        )
    if field.type == FieldDescriptor.TYPE_ENUM and field.enum_type is not None:
        name = "_e_" + field.enum_type.full_name.replace(".", "_")
        names[name] = _EnumNames({v.number: v.name for v in field.enum_type.values}).__getitem__
        return f"{name}(x)"
    if field.type in _INT64_TYPES:
        return "str(x)"
    if field.type in _PLAIN_TYPES:
        return "x"
    return None


#: Each message type's encoders, made once from its descriptor, by what
#: they read (:data:`_MESSAGE`, :data:`_FIELDS`, :data:`_OBJECTS`).
_ENCODERS: dict[tuple[str, str], _Convert] = {}


def _encoder(descriptor: Descriptor, mode: str) -> _Convert:
    """The function writing ``descriptor``'s messages (or their fields
    dicts, or engine values: ``mode``) as JSON: Python source made from the
    descriptor, one statement per field, so a field is read by its name with
    no lookup per field at run time. A field is written when it is set: a
    non-empty list, a set field of a oneof, a field with presence (a
    message, ``optional``) that is present, any other one that is not its
    zero value, as the mapping says; in a fields dict or an engine value, a
    field is set as railyard_api.fields says, to the same effect."""
    key = (descriptor.full_name, mode)
    fields = mode != _MESSAGE
    found = _ENCODERS.get(key)
    if found is not None:
        return found

    # Known before its fields are: a message type may hold itself.
    def later(message: Any) -> Any:
        return _ENCODERS[key](message)

    _ENCODERS[key] = later
    names: dict[str, Any] = {"str": str, "dict": dict}
    lines = [f"def encode_{descriptor.name}(m):", "    out = {}"]
    # Keys in the fields' order (a oneof where its first member is), the
    # same for a message and its fields dict: a retry repeats its first
    # answer's bytes.
    for field in descriptor.fields:
        oneof = field.containing_oneof
        if oneof is not None and not _synthetic(oneof):
            if field is not oneof.fields[0]:
                continue
            if mode == _OBJECTS:
                raise TypeError(f"{descriptor.full_name}: an engine value needs an adapter")
            if fields:  # (at most one member is given)
                members: dict[str, tuple[str, _Convert]] = {}
                for member in oneof.fields:
                    value = _value(member, names, mode)
                    if value is None:
                        raise TypeError(f"{descriptor.full_name} has no fields encoder")
                    # Each member's conversion as a function of its own, so
                    # the member given is found by the dict's few keys, not
                    # by asking for each of the oneof's many members.
                    scope = dict(names)
                    exec(f"def convert(x):\n    return {value}", scope)
                    members[member.name] = (member.json_name, scope["convert"])
                name = f"_one_{oneof.name}"
                names[name] = members
                lines += [
                    "    for k in m:",
                    f"        c = {name}.get(k)",
                    "        if c is not None:",
                    "            x = m[k]",
                    "            if x is not None:",
                    "                out[c[0]] = c[1](x)",
                ]
                continue
            lines.append(f"    w = m.WhichOneof({oneof.name!r})")
            for n, member in enumerate(oneof.fields):
                value = _value(member, names, mode)
                if value is None:
                    encoder = _ENCODERS[key] = json_format.MessageToDict
                    return encoder
                lines += [
                    f"    {'if' if n == 0 else 'elif'} w == {member.name!r}:",
                    f"        x = {attribute(member)}",
                    f"        out[{member.json_name!r}] = {value}",
                ]
            continue
        value = _value(field, names, mode)
        if value is None:
            if fields:
                raise TypeError(f"{descriptor.full_name} has no fields encoder ({field.name})")
            encoder = _ENCODERS[key] = json_format.MessageToDict
            return encoder
        read = f"m.get({field.name!r})" if mode == _FIELDS else attribute(field)
        json_key = repr(field.json_name)
        if field.is_repeated:
            items = "list(v)" if value == "x" else f"[{value} for x in v]"
            sub = field.message_type
            if fields and sub is not None and sub.full_name in SHARED:
                # In C, once every value has been seen.
                items = f"_s_many_{sub.full_name.replace('.', '_')}(v)"
            lines += [f"    v = {read}", "    if v:", f"        out[{json_key}] = {items}"]
        elif fields and field.has_presence:
            lines += [
                f"    x = {read}",
                "    if x is not None:",
                f"        out[{json_key}] = {value}",
            ]
        elif field.has_presence:
            lines += [
                f"    if m.HasField({field.name!r}):",
                f"        x = {read}",
                f"        out[{json_key}] = {value}",
            ]
        else:
            lines += [f"    x = {read}", "    if x:", f"        out[{json_key}] = {value}"]
    lines.append("    return out")
    # Made from our own descriptors, never from input, as dataclasses
    # makes __init__: a generic loop over ListFields() was slower.
    exec("\n".join(lines), names)
    encoder = _ENCODERS[key] = names[f"encode_{descriptor.name}"]
    return cast(_Convert, encoder)


def _synthetic(oneof: Any) -> bool:
    """A proto3 ``optional`` field's own oneof (not a oneof of the schema)."""
    # protoc names it "_" + the field's name (the descriptor has no flag).
    return len(oneof.fields) == 1 and oneof.name == "_" + oneof.fields[0].name


def to_dict(message: Message) -> dict[str, Any]:
    """``message`` in the canonical JSON mapping, as ``MessageToDict`` gives it.
    Nested objects may be shared with earlier answers (:func:`_memoized`)."""
    # The stubs type DESCRIPTOR as either descriptor class; at run time the
    # C (upb) one is the class descriptor.Descriptor names.
    out: dict[str, Any] = _encoder(cast(Descriptor, message.DESCRIPTOR), _MESSAGE)(message)
    return out


def fields_to_dict(descriptor: Descriptor, fields: Fields | Message) -> dict[str, Any]:
    """The JSON of a message of ``descriptor``'s type given as its fields
    (railyard_api.fields), the same as :func:`to_dict` of the message built
    from them; a message given is written by :func:`to_dict`. Nested objects
    may be shared with earlier answers."""
    if not isinstance(fields, Mapping):
        return to_dict(fields)
    out: dict[str, Any] = _encoder(descriptor, _FIELDS)(fields)
    return out


# ------------------------------------------------------ on input: canonical bodies

_INT64_TEXT: Final = re.compile(r"-?[0-9]{1,20}")
#: Each scalar type's range, as ParseDict checks it.
_RANGES: Final = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SINT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1),
}

#: One field as the reader takes it: its proto name, the reader of one of its
#: values (None: not canonical), its oneof's name (None: in no oneof of the
#: schema) and whether it is repeated.
_FieldReader = tuple[str, Callable[[Any], Any], str | None, bool]

#: Per message type: its fields by JSON name, or None for a type this reader
#: leaves to ParseDict (maps, bytes, floats, well-known types).
_READERS: dict[str, dict[str, _FieldReader] | None] = {}


def _reader(descriptor: Descriptor) -> dict[str, _FieldReader] | None:
    """``descriptor``'s fields by JSON name, each with the reader of its
    values, made once: what a body costs to read is then a dict lookup and
    one small function a value, not the descriptor's attributes read again."""
    if descriptor.full_name in _READERS:
        return _READERS[descriptor.full_name]
    _READERS[descriptor.full_name] = None  # while its fields are judged
    table: dict[str, _FieldReader] | None = {}
    for field in descriptor.fields:
        message = field.message_type
        if message is not None:
            readable = (
                not message.GetOptions().map_entry
                and message.file.package != _WKT
                and _reader(message) is not None
            ) or message.full_name == descriptor.full_name
        else:
            readable = field.type in _RANGES or field.type in (
                FieldDescriptor.TYPE_BOOL,
                FieldDescriptor.TYPE_STRING,
                FieldDescriptor.TYPE_ENUM,
            )
        if not readable:
            table = None
            break
        assert table is not None
        oneof = field.containing_oneof
        table[field.json_name] = (
            field.name,
            _value_reader(field),
            None if oneof is None or _synthetic(oneof) else oneof.name,
            field.is_repeated,
        )
    _READERS[descriptor.full_name] = table
    return table


def canonical_fields(descriptor: Descriptor, data: Any) -> dict[str, Any] | None:
    """``data``, JSON for a message of ``descriptor``'s type, as that
    message's fields (railyard_api.fields) when it is written the one way
    the canonical mapping writes it: JSON names, numbers as JSON numbers
    (64-bit ones as strings or numbers) in their type's range, enums by
    name, at most one member of a oneof, no nulls; None for anything else,
    which ParseDict reads (other spellings) or explains (errors). What this
    reads, ParseDict reads the same (tests/test_http_canonical_body.py); it is
    the one reader of every body clients send as API.md writes them, made
    from the descriptors, so no field is restated here."""
    table = _reader(descriptor)
    if table is None or type(data) is not dict:
        return None
    return _read(table, data)


def _read(table: dict[str, _FieldReader], data: dict[str, Any]) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    chosen: set[str] | None = None
    for key, value in data.items():
        found = table.get(key)
        if found is None:
            return None
        name, read, oneof, repeated = found
        if oneof is not None:
            if chosen is None:
                chosen = {oneof}
            elif oneof in chosen:
                return None
            else:
                chosen.add(oneof)
        if repeated:
            if type(value) is not list:
                return None
            items = [read(item) for item in value]
            if None in items:
                return None
            out[name] = items
        else:
            value = read(value)
            if value is None:
                return None
            out[name] = value
    return out


def _value_reader(field: FieldDescriptor) -> Callable[[Any], Any]:
    """The reader of one canonical JSON value of ``field``: its fields value,
    or None if it is not one."""
    kind = field.type
    bounds = _RANGES.get(kind)
    if bounds is not None:
        low, high = bounds
        if kind in _INT64_TYPES:

            def read_int64(value: Any) -> Any:
                if type(value) is str and _INT64_TEXT.fullmatch(value):
                    value = int(value)
                return value if type(value) is int and low <= value <= high else None

            return read_int64

        def read_int(value: Any) -> Any:
            return value if type(value) is int and low <= value <= high else None

        return read_int
    if kind == FieldDescriptor.TYPE_STRING:
        return lambda value: value if type(value) is str else None
    if kind == FieldDescriptor.TYPE_BOOL:
        return lambda value: value if type(value) is bool else None
    enum = field.enum_type
    if enum is not None:
        numbers = {v.name: v.number for v in enum.values}
        return lambda value: numbers.get(value) if type(value) is str else None
    message = field.message_type
    assert message is not None  # (_reader admits no other type)

    def read_message(value: Any) -> Any:
        # Looked up when read: a message type may hold itself.
        table = _READERS[message.full_name]
        assert table is not None  # (readable, or this field's type was not)
        return _read(table, value) if type(value) is dict else None

    return read_message


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
