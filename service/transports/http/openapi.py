"""JSON Schemas of protobuf messages in the canonical proto3 JSON mapping.

The HTTP transport speaks ``google.protobuf.json_format``; its OpenAPI
document is generated here from the same descriptors, so the documented
shapes cannot drift from the proto: lowerCamelCase property names, enums as
their value names, 64-bit integers as decimal strings, 32-bit unsigned
integers as non-negative integers, and every nested message or enum as a
``$ref`` to ``components/schemas/<Name>``, ``<Name>`` being the full name
without the package (``Move.Play``). Unknown properties are refused, as the
server's parser refuses them.

A component that a request body reaches (:func:`add_components` follows the
``$ref`` from every ``requestBody``) also admits what the parser takes on
input besides the canonical form: ``null`` for any singular field, and for
a repeated one as a whole (the field's default: absent), a JSON number for a
64-bit integer, a decimal string for a 32-bit one, an enum value's number
for its name. Responses never use these forms; their own components leave
them out.

proto3 has no required fields and no bounds: what the service refuses of
one field on its own comes from a table of :class:`Limits` keyed by the
field's full name (``railyard.v1.Ruleset.set_max``), or a oneof's
(``railyard.v1.Move.action``), which :func:`message_schema` applies; the
service's table is :data:`service.transports.http.field_limits.FIELD_LIMITS`. A oneof allows
at most one of its members (a member given as ``null`` is absent), exactly
one where its limits say ``required``; this is also documented in the
description and under ``x-oneof``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor, FileDescriptor
from google.rpc import error_details_pb2

JSONSchema = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Limits:
    """What the service refuses of one field (or oneof) on its own, beyond
    the JSON mapping of its type; every response keeps to it too.

    ``required``: the field must be given, and not null (a oneof: exactly
    one of its members). ``minimum``/``maximum``: an integer's bounds.
    ``values``: the only values taken (an enum's by value name; its numbers
    follow). ``max_length``: a string's length in characters.
    ``min_items``/``max_items``: a repeated field's length.
    """

    required: bool = False
    minimum: int | None = None
    maximum: int | None = None
    values: tuple[int | str, ...] | None = None
    max_length: int | None = None
    min_items: int | None = None
    max_items: int | None = None


#: A field that no table names.
NO_LIMITS: Final = Limits()

REF_PREFIX: Final = "#/components/schemas/"
#: The error body of every failed call (a ``google.rpc.Status``).
STATUS: Final = "Status"
ERROR_INFO: Final = "ErrorInfo"

_F = FieldDescriptor
_INT64_TYPES: Final = frozenset({_F.TYPE_INT64, _F.TYPE_SINT64, _F.TYPE_SFIXED64})
_UINT64_TYPES: Final = frozenset({_F.TYPE_UINT64, _F.TYPE_FIXED64})
_INT32_TYPES: Final = frozenset({_F.TYPE_INT32, _F.TYPE_SINT32, _F.TYPE_SFIXED32})
_UINT32_TYPES: Final = frozenset({_F.TYPE_UINT32, _F.TYPE_FIXED32})
_FLOAT_TYPES: Final = frozenset({_F.TYPE_DOUBLE, _F.TYPE_FLOAT})

_INT64: Final[JSONSchema] = {
    "type": ["string", "integer"],
    "pattern": "^-?[0-9]+$",
    "minimum": -(2**63),
    "maximum": 2**63 - 1,
    "description": "int64: a decimal string (a JSON number is accepted on input).",
}
_UINT64: Final[JSONSchema] = {
    "type": ["string", "integer"],
    "pattern": "^[0-9]+$",
    "minimum": 0,
    "maximum": 2**64 - 1,
    "description": "uint64: a decimal string (a JSON number is accepted on input).",
}
_INT32: Final[JSONSchema] = {"type": "integer", "format": "int32"}
_UINT32: Final[JSONSchema] = {"type": "integer", "minimum": 0, "maximum": 2**32 - 1}
_FLOAT: Final[JSONSchema] = {
    "anyOf": [{"type": "number"}, {"type": "string", "enum": ["NaN", "Infinity", "-Infinity"]}]
}

#: Well-known types have their own JSON forms (none is used by railyard.v1 today).
_WELL_KNOWN: Final[dict[str, JSONSchema]] = {
    "google.protobuf.Timestamp": {"type": "string", "format": "date-time"},
    "google.protobuf.Duration": {"type": "string", "pattern": "^-?[0-9]+(\\.[0-9]{1,9})?s$"},
    "google.protobuf.FieldMask": {"type": "string"},
    "google.protobuf.Empty": {"type": "object", "additionalProperties": False},
    "google.protobuf.Struct": {"type": "object"},
    "google.protobuf.Value": {},
    "google.protobuf.ListValue": {"type": "array"},
    "google.protobuf.Any": {"type": "object", "required": ["@type"]},
    "google.protobuf.BoolValue": {"type": "boolean"},
    "google.protobuf.StringValue": {"type": "string"},
    "google.protobuf.BytesValue": {"type": "string", "contentEncoding": "base64"},
    "google.protobuf.Int32Value": _INT32,
    "google.protobuf.UInt32Value": _UINT32,
    "google.protobuf.Int64Value": _INT64,
    "google.protobuf.UInt64Value": _UINT64,
    "google.protobuf.FloatValue": _FLOAT,
    "google.protobuf.DoubleValue": _FLOAT,
}


def schema_name(descriptor: Descriptor | EnumDescriptor) -> str:
    """The component name: the full name without the package (``Move.Play``)."""
    package = descriptor.file.package
    full_name: str = descriptor.full_name
    if package and full_name.startswith(package + "."):
        return full_name[len(package) + 1 :]
    return full_name


def ref(descriptor: Descriptor | EnumDescriptor) -> JSONSchema:
    """A ``$ref`` to the component of a message or enum."""
    return {"$ref": REF_PREFIX + schema_name(descriptor)}


def status_ref() -> JSONSchema:
    return {"$ref": REF_PREFIX + STATUS}


def enum_schema(descriptor: EnumDescriptor, *, wire_input: bool = False) -> JSONSchema:
    """A string enum of the value names, zero value included (an ``optional``
    enum field set to it is printed); on input, their numbers too."""
    return _enum_values(descriptor, [value.name for value in descriptor.values], wire_input)


def _enum_values(descriptor: EnumDescriptor, names: list[str], wire_input: bool) -> JSONSchema:
    if not wire_input:
        return {"type": "string", "enum": names}
    numbers = [value.number for value in descriptor.values if value.name in names]
    return {
        "type": ["string", "integer"],
        "enum": [*names, *numbers],
        "description": "By value name; the value's number is accepted on input.",
    }


def _synthetic_oneofs(descriptor: Descriptor) -> set[str]:
    """Names of the oneofs protoc made for proto3 ``optional`` fields."""
    proto = descriptor_pb2.DescriptorProto()
    descriptor.CopyToProto(proto)
    return {
        proto.oneof_decl[field.oneof_index].name
        for field in proto.field
        if field.proto3_optional and field.HasField("oneof_index")
    }


# ------------------------------------------------------------------ integers


def _group(alternatives: list[str]) -> str:
    return alternatives[0] if len(alternatives) == 1 else "(?:" + "|".join(alternatives) + ")"


def _digits(count: int) -> str:
    return "" if count == 0 else "[0-9]" if count == 1 else f"[0-9]{{{count}}}"


def _same_length(low: str, high: str) -> list[str]:
    """Regexes of the numbers from ``low`` to ``high``, written with as many
    digits as both (``low <= high``)."""
    if low == high:
        return [low]
    rest = len(low) - 1
    if low[0] == high[0]:
        return [low[0] + _group(_same_length(low[1:], high[1:]))]
    if low[1:] == "0" * rest and high[1:] == "9" * rest:
        return [f"[{low[0]}-{high[0]}]" + _digits(rest)]
    parts = [low[0] + _group(_same_length(low[1:], "9" * rest))]
    middle = int(low[0]) + 1, int(high[0]) - 1
    if middle[0] <= middle[1]:
        first = str(middle[0]) if middle[0] == middle[1] else f"[{middle[0]}-{middle[1]}]"
        parts.append(first + _digits(rest))
    parts.append(high[0] + _group(_same_length("0" * rest, high[1:])))
    return parts


def _naturals(low: int, high: int | None) -> list[str]:
    """Regexes of the decimal numbers from ``low`` to ``high`` (``0 <= low``;
    ``None``: no end), without leading zeros."""
    if high is None:
        if low <= 1:
            return ["0", "[1-9][0-9]*"] if low == 0 else ["[1-9][0-9]*"]
        length = len(str(low))
        return [*_naturals(low, 10**length - 1), f"[1-9][0-9]{{{length},}}"]
    parts: list[str] = []
    for length in range(len(str(low)), len(str(high)) + 1):
        start = max(low, 10 ** (length - 1) if length > 1 else 0)
        end = min(high, 10**length - 1)
        parts += _same_length(str(start), str(end))
    return parts


def decimal_pattern(low: int | None, high: int | None) -> str:
    """An anchored regex of the integers from ``low`` to ``high`` (``None``:
    no end) as decimal strings: an optional ``-``, leading zeros allowed (the
    parser reads them), no ``+``.

    >>> decimal_pattern(6, 18)
    '^0*(?:[6-9]|1[0-8])$'
    >>> decimal_pattern(-5, None)
    '^(?:-0*[1-5]|0*(?:0|[1-9][0-9]*))$'
    """
    alternatives = []
    if low is None or low < 0:
        bottom = 1 if high is None or high >= 0 else -high
        alternatives.append("-0*" + _group(_naturals(bottom, None if low is None else -low)))
    if high is None or high >= 0:
        alternatives.append("0*" + _group(_naturals(max(low or 0, 0), high)))
    return "^" + _group(alternatives) + "$"


def _values_pattern(values: Iterable[int]) -> str:
    """An anchored regex of ``values`` as decimal strings (as :func:`decimal_pattern`)."""
    chosen = sorted(set(values))
    alternatives = []
    if any(v < 0 for v in chosen):
        alternatives.append("-0*" + _group([str(-v) for v in chosen if v < 0]))
    if any(v >= 0 for v in chosen):
        alternatives.append("0*" + _group([str(v) for v in chosen if v >= 0]))
    return "^" + _group(alternatives) + "$"


def _bounds(field: FieldDescriptor) -> tuple[int, int]:
    kind = field.type
    if kind in _INT64_TYPES:
        return -(2**63), 2**63 - 1
    if kind in _UINT64_TYPES:
        return 0, 2**64 - 1
    if kind in _INT32_TYPES:
        return -(2**31), 2**31 - 1
    return 0, 2**32 - 1


def _integer_schema(field: FieldDescriptor, limits: Limits, wire_input: bool) -> JSONSchema:
    """An integer field: in responses 64-bit ones as decimal strings, 32-bit
    ones as numbers; on input either (``anyOf`` the two), as the parser takes them."""
    kind = field.type
    wide = kind in _INT64_TYPES or kind in _UINT64_TYPES
    narrowed = limits.minimum is not None or limits.maximum is not None or limits.values is not None
    if not wire_input and not narrowed:
        if wide:
            return dict(_INT64 if kind in _INT64_TYPES else _UINT64)
        return dict(_INT32 if kind in _INT32_TYPES else _UINT32)
    low, high = _bounds(field)
    low = low if limits.minimum is None else max(low, limits.minimum)
    high = high if limits.maximum is None else min(high, limits.maximum)
    number: JSONSchema = {"type": "integer"}
    if kind in _INT32_TYPES:
        number["format"] = "int32"
    string: JSONSchema = {"type": "string"}
    if limits.values is not None:
        values = [v for v in limits.values if isinstance(v, int) and low <= v <= high]
        number["enum"] = values
        string["pattern"] = _values_pattern(values)
    else:
        number["minimum"], number["maximum"] = low, high
        # Where only the type bounds a string, its pattern leaves that end open.
        type_low, type_high = _bounds(field)
        string["pattern"] = decimal_pattern(
            None if low == type_low < 0 else low, None if high == type_high else high
        )
    schema: JSONSchema = {"anyOf": [number, string]} if wire_input else string if wide else number
    if wide:
        schema["description"] = (_INT64 if kind in _INT64_TYPES else _UINT64)["description"]
    return schema


# ------------------------------------------------------------------ fields and messages


def _value_schema(
    field: FieldDescriptor, limits: Limits = NO_LIMITS, wire_input: bool = False
) -> JSONSchema:
    """The schema of one value of ``field`` (an item, for a repeated field)."""
    kind = field.type
    if kind == _F.TYPE_MESSAGE:
        message_type = field.message_type
        assert message_type is not None
        if message_type.full_name in _WELL_KNOWN:
            return dict(_WELL_KNOWN[message_type.full_name])
        return ref(message_type)
    if kind == _F.TYPE_ENUM:
        enum = field.enum_type
        assert enum is not None
        if limits.values is None:
            return ref(enum)
        names = [value.name for value in enum.values if value.name in limits.values]
        return _enum_values(enum, names, wire_input)
    if kind == _F.TYPE_BOOL:
        return {"type": "boolean"}
    if kind == _F.TYPE_STRING:
        schema: JSONSchema = {"type": "string"}
        if limits.values is not None:
            schema["enum"] = [v for v in limits.values if isinstance(v, str)]
        if limits.max_length is not None:
            schema["maxLength"] = limits.max_length
        return schema
    if kind == _F.TYPE_BYTES:
        return {"type": "string", "contentEncoding": "base64"}
    if kind in _INT64_TYPES | _UINT64_TYPES | _INT32_TYPES | _UINT32_TYPES:
        return _integer_schema(field, limits, wire_input)
    if kind in _FLOAT_TYPES:
        return dict(_FLOAT)
    raise ValueError(f"{field.full_name}: field type {kind} has no JSON mapping")


def _check_limits(field: FieldDescriptor, limits: Limits) -> None:
    """Refuse a table row that cannot apply to its field (a typo would
    otherwise be silently left out of the document)."""
    kind = field.type
    integer = kind in _INT64_TYPES | _UINT64_TYPES | _INT32_TYPES | _UINT32_TYPES
    named = integer or kind in (_F.TYPE_ENUM, _F.TYPE_STRING)
    wrong = [
        name
        for name, given, fits in (
            ("minimum", limits.minimum is not None, integer),
            ("maximum", limits.maximum is not None, integer),
            ("values", limits.values is not None, named),
            ("max_length", limits.max_length is not None, kind == _F.TYPE_STRING),
            ("min_items", limits.min_items is not None, bool(field.is_repeated)),
            ("max_items", limits.max_items is not None, bool(field.is_repeated)),
        )
        if given and not fits
    ]
    if wrong:
        raise ValueError(f"{field.full_name}: {', '.join(wrong)} cannot apply to this field")


def or_null(schema: JSONSchema) -> JSONSchema:
    """``schema`` or ``null``."""
    if not schema:
        return schema  # anything, null included
    if set(schema) <= {"anyOf", "description"}:
        return {**schema, "anyOf": [*schema["anyOf"], {"type": "null"}]}
    kind = schema.get("type")
    if kind is None or "$ref" in schema:
        return {"anyOf": [schema, {"type": "null"}]}
    nullable = dict(schema)
    nullable["type"] = [*(kind if isinstance(kind, list) else [kind]), "null"]
    if "enum" in nullable:
        nullable["enum"] = [*nullable["enum"], None]
    return nullable


def field_schema(
    field: FieldDescriptor, limits: Limits = NO_LIMITS, *, wire_input: bool = False
) -> JSONSchema:
    """The schema of a field's JSON value; on input (``wire_input``) also
    ``null`` unless ``limits`` make it required."""
    _check_limits(field, limits)
    entry = field.message_type
    if entry is not None and entry.GetOptions().map_entry:
        value_field = entry.fields_by_name["value"]
        schema: JSONSchema = {
            "type": "object",
            "additionalProperties": _value_schema(value_field, wire_input=wire_input),
        }
    elif field.is_repeated:
        schema = {"type": "array", "items": _value_schema(field, limits, wire_input)}
        if limits.min_items is not None:
            schema["minItems"] = limits.min_items
        if limits.max_items is not None:
            schema["maxItems"] = limits.max_items
    else:
        schema = _value_schema(field, limits, wire_input)
    return or_null(schema) if wire_input and not limits.required else schema


def _given(name: str, wire_input: bool) -> JSONSchema:
    """``name`` is present, and not null: a oneof member that counts."""
    if not wire_input:
        return {"required": [name]}
    return {"required": [name], "properties": {name: {"not": {"type": "null"}}}}


def message_schema(
    descriptor: Descriptor,
    omit: Iterable[str] = (),
    limits: Mapping[str, Limits] | None = None,
    *,
    wire_input: bool = False,
) -> JSONSchema:
    """The JSON Schema of a message; ``omit`` names (proto names) fields left
    out, such as a request's ``game_id`` that travels in the URL path;
    ``limits`` by field or oneof full name; ``wire_input``: in the forms the
    parser takes on input too (the module's docstring)."""
    table = limits or {}
    left_out = set(omit)
    fields = [f for f in descriptor.fields if f.name not in left_out]
    properties = {
        f.json_name: field_schema(f, table.get(f.full_name, NO_LIMITS), wire_input=wire_input)
        for f in fields
    }
    schema: JSONSchema = {
        "type": "object",
        "title": schema_name(descriptor),
        "properties": properties,
        "additionalProperties": False,
    }
    required = [f.json_name for f in fields if table.get(f.full_name, NO_LIMITS).required]
    if required:
        schema["required"] = required
    synthetic = _synthetic_oneofs(descriptor)
    oneofs = {
        oneof: [f.json_name for f in oneof.fields if f.name not in left_out]
        for oneof in descriptor.oneofs
        if oneof.name not in synthetic
    }
    rules: list[JSONSchema] = []
    sentences: list[str] = []
    for oneof, members in oneofs.items():
        given = [_given(member, wire_input) for member in members]
        if table.get(oneof.full_name, NO_LIMITS).required:
            rules.append({"oneOf": given})
            sentences.append(f"Exactly one of {', '.join(members)} (oneof {oneof.name}).")
            schema["minProperties"] = 1
        else:
            rules.append({"oneOf": [{"not": {"anyOf": given}}, *given]})
            sentences.append(f"At most one of {', '.join(members)} (oneof {oneof.name}).")
    if oneofs:
        schema["x-oneof"] = {oneof.name: members for oneof, members in oneofs.items()}
        schema["description"] = " ".join(sentences)
        if len(rules) == 1:
            schema.update(rules[0])
        else:
            schema["allOf"] = rules
    return schema


def _error_info_schema() -> JSONSchema:
    schema = message_schema(error_details_pb2.ErrorInfo.DESCRIPTOR)
    schema["properties"] = {
        "@type": {"type": "string", "const": "type.googleapis.com/google.rpc.ErrorInfo"},
        **schema["properties"],
    }
    schema["description"] = (
        "Why the call failed: reason (UPPER_SNAKE), domain, and metadata naming "
        "every value the message mentions (the rule id under 'rule')."
    )
    return schema


def status_schemas() -> dict[str, JSONSchema]:
    """``Status`` (google.rpc.Status in JSON) and its ``ErrorInfo`` detail."""
    status: JSONSchema = {
        "type": "object",
        "title": STATUS,
        "description": "A google.rpc.Status: the gRPC code, a sentence, one ErrorInfo.",
        "properties": {
            "code": {"type": "integer", "format": "int32", "description": "gRPC status code"},
            "message": {"type": "string"},
            "details": {"type": "array", "items": {"$ref": REF_PREFIX + ERROR_INFO}},
        },
        "required": ["code", "message"],
        "additionalProperties": False,
    }
    return {STATUS: status, ERROR_INFO: _error_info_schema()}


def _index(files: Iterable[FileDescriptor]) -> dict[str, Descriptor | EnumDescriptor]:
    """Every message and enum of ``files`` (nested ones too) by component name."""
    found: dict[str, Descriptor | EnumDescriptor] = {}

    def visit(message: Descriptor) -> None:
        found[schema_name(message)] = message
        for enum in message.enum_types:
            found[schema_name(enum)] = enum
        for nested in message.nested_types:
            if not nested.GetOptions().map_entry:
                visit(nested)

    for file in files:
        for enum in file.enum_types_by_name.values():
            found[schema_name(enum)] = enum
        for message in file.message_types_by_name.values():
            visit(message)
    return found


def _refs(node: object) -> Iterable[str]:
    if isinstance(node, Mapping):
        target = node.get("$ref")
        if isinstance(target, str) and target.startswith(REF_PREFIX):
            yield target[len(REF_PREFIX) :]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _body_refs(document: JSONSchema) -> list[str]:
    """The components named by the request bodies of ``document``."""
    return [
        name
        for item in document.get("paths", {}).values()
        for operation in item.values()
        if isinstance(operation, Mapping)
        for name in _refs(operation.get("requestBody", {}))
    ]


def add_components(
    document: JSONSchema,
    files: Iterable[FileDescriptor],
    limits: Mapping[str, Limits] | None = None,
) -> JSONSchema:
    """Fill ``components/schemas`` of an OpenAPI ``document`` with every message
    and enum it refers to, and theirs in turn; unknown names raise ``KeyError``.
    What a request body reaches is written in its input forms (components
    already there are kept, and followed); ``limits`` as for
    :func:`message_schema`."""
    known = _index(files)
    schemas: dict[str, JSONSchema] = document.setdefault("components", {}).setdefault("schemas", {})
    followed: set[str] = set()
    # Input first: a component both sides use takes the input forms, a
    # superset of what any response holds.
    for pending, wire_input in ((_body_refs(document), True), (list(_refs(document)), False)):
        while pending:
            name = pending.pop()
            if name in followed:
                continue
            followed.add(name)
            if name in (STATUS, ERROR_INFO):
                schemas.update(status_schemas())
                continue
            if name not in schemas:
                descriptor = known[name]
                if isinstance(descriptor, EnumDescriptor):
                    schemas[name] = enum_schema(descriptor, wire_input=wire_input)
                else:
                    schemas[name] = message_schema(descriptor, limits=limits, wire_input=wire_input)
            pending.extend(_refs(schemas[name]))
    document["components"]["schemas"] = dict(sorted(schemas.items()))
    return document
