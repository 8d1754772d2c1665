"""JSON Schemas of protobuf messages in the canonical proto3 JSON mapping.

The HTTP transport speaks ``google.protobuf.json_format``; its OpenAPI
document is generated here from the same descriptors, so the documented
shapes cannot drift from the proto: lowerCamelCase property names, enums as
their value names, 64-bit integers as decimal strings (a JSON number is
accepted on input), 32-bit unsigned integers as non-negative integers, and
every nested message or enum as a ``$ref`` to ``components/schemas/<Name>``,
``<Name>`` being the full name without the package (``Move.Play``).

Every field is optional (proto3 has no required fields) and unknown
properties are refused, as the server's parser refuses them. A oneof is
documented in the description and under ``x-oneof``; a message that is
nothing but one oneof (``Move``) also carries ``maxProperties: 1``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor, FileDescriptor
from google.rpc import error_details_pb2

JSONSchema = dict[str, Any]

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


def enum_schema(descriptor: EnumDescriptor) -> JSONSchema:
    """A string enum of the value names, zero value included (an ``optional``
    enum field set to it is printed)."""
    return {"type": "string", "enum": [value.name for value in descriptor.values]}


def _synthetic_oneofs(descriptor: Descriptor) -> set[str]:
    """Names of the oneofs protoc made for proto3 ``optional`` fields."""
    proto = descriptor_pb2.DescriptorProto()
    descriptor.CopyToProto(proto)
    return {
        proto.oneof_decl[field.oneof_index].name
        for field in proto.field
        if field.proto3_optional and field.HasField("oneof_index")
    }


def _value_schema(field: FieldDescriptor) -> JSONSchema:
    """The schema of one value of ``field`` (an item, for a repeated field)."""
    kind = field.type
    if kind == _F.TYPE_MESSAGE:
        message_type = field.message_type
        assert message_type is not None
        if message_type.full_name in _WELL_KNOWN:
            return dict(_WELL_KNOWN[message_type.full_name])
        return ref(message_type)
    if kind == _F.TYPE_ENUM:
        assert field.enum_type is not None
        return ref(field.enum_type)
    if kind == _F.TYPE_BOOL:
        return {"type": "boolean"}
    if kind == _F.TYPE_STRING:
        return {"type": "string"}
    if kind == _F.TYPE_BYTES:
        return {"type": "string", "contentEncoding": "base64"}
    if kind in _INT64_TYPES:
        return dict(_INT64)
    if kind in _UINT64_TYPES:
        return dict(_UINT64)
    if kind in _INT32_TYPES:
        return dict(_INT32)
    if kind in _UINT32_TYPES:
        return dict(_UINT32)
    if kind in _FLOAT_TYPES:
        return dict(_FLOAT)
    raise ValueError(f"{field.full_name}: field type {kind} has no JSON mapping")


def field_schema(field: FieldDescriptor) -> JSONSchema:
    entry = field.message_type
    if entry is not None and entry.GetOptions().map_entry:
        value_field = entry.fields_by_name["value"]
        return {"type": "object", "additionalProperties": _value_schema(value_field)}
    if field.is_repeated:
        return {"type": "array", "items": _value_schema(field)}
    return _value_schema(field)


def message_schema(descriptor: Descriptor, omit: Iterable[str] = ()) -> JSONSchema:
    """The JSON Schema of a message; ``omit`` names (proto names) fields left
    out, such as a request's ``game_id`` that travels in the URL path."""
    left_out = set(omit)
    fields = [f for f in descriptor.fields if f.name not in left_out]
    properties = {f.json_name: field_schema(f) for f in fields}
    schema: JSONSchema = {
        "type": "object",
        "title": schema_name(descriptor),
        "properties": properties,
        "additionalProperties": False,
    }
    synthetic = _synthetic_oneofs(descriptor)
    oneofs = {
        oneof.name: [f.json_name for f in oneof.fields if f.name not in left_out]
        for oneof in descriptor.oneofs
        if oneof.name not in synthetic
    }
    if oneofs:
        schema["x-oneof"] = oneofs
        schema["description"] = " ".join(
            f"At most one of {', '.join(members)} (oneof {name})."
            for name, members in oneofs.items()
        )
        if len(oneofs) == 1 and len(next(iter(oneofs.values()))) == len(properties):
            schema["maxProperties"] = 1
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


def add_components(document: JSONSchema, files: Iterable[FileDescriptor]) -> JSONSchema:
    """Fill ``components/schemas`` of an OpenAPI ``document`` with every message
    and enum it refers to, and theirs in turn; unknown names raise ``KeyError``."""
    known = _index(files)
    schemas: dict[str, JSONSchema] = document.setdefault("components", {}).setdefault("schemas", {})
    pending = list(_refs(document))
    while pending:
        name = pending.pop()
        if name in schemas:
            continue
        if name in (STATUS, ERROR_INFO):
            schemas.update(status_schemas())
            continue
        descriptor = known[name]
        if isinstance(descriptor, EnumDescriptor):
            schemas[name] = enum_schema(descriptor)
        else:
            schemas[name] = message_schema(descriptor)
            pending.extend(_refs(schemas[name]))
    document["components"]["schemas"] = dict(sorted(schemas.items()))
    return document
