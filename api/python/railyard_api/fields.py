"""Messages as plain values: a message's *fields*, a dict by the fields'
proto names, which either transport writes out.

:mod:`railyard_api.convert` says once, per message, what an engine value
is on the wire (``view_fields``). gRPC fills a message from that dict
(:func:`build`); the service's HTTP transport writes its canonical JSON
from the same dict, with no message in between (the message and its JSON
were most of an HTTP move's cost). Both writers are made from the
messages' descriptors, so neither restates a field.

The shape of a fields dict, for a message type ``T``:

- a key is a field's proto name (``turn_deadline``); a key left out, or
  ``None``, is a field not set;
- a scalar is its Python value, an enum its number;
- a field with no presence (proto3 scalars, lists) set to its zero value
  (``0``, ``""``, ``False``, empty) is as good as not set, as on the wire;
  a message field, an ``optional`` one and a oneof's member are set when
  given (``{}`` is an empty message that is there; ``0`` a oneof's member
  chosen);
- a message is a fields dict of its own, or a message of its type (a
  well-known type such as a Timestamp, or a message built before);
- a list is any sequence.

Dicts of :data:`SHARED` types (a tile) are shared between many views and
looked up by identity, so each is filled into a message once: nothing may
change a fields dict once made.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar, cast

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

M = TypeVar("M", bound=Message)
Fields = Mapping[str, Any]

#: Message types whose fields dicts are shared: a view's tiles, taken from
#: one table of every tile (railyard_api.convert), are most of a view.
#: Trains are not: kept between views, the memo of a server's thousands of
#: trains cost it more than it saved (docs/performance.md).
SHARED: Final = frozenset({"railyard.v1.Tile"})
#: Entries kept per shared type; past it the type's memo starts over.
MEMO_SIZE: Final = 4096


def identity_memo(make: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``make`` remembering its answer per fields dict, by identity. The
    dict is kept with its answer, so its id cannot be taken by another
    while remembered."""
    memo: dict[int, tuple[Any, Any]] = {}

    def lookup(value: Any) -> Any:
        found = memo.get(id(value))
        if found is not None and found[0] is value:
            return found[1]
        if len(memo) >= MEMO_SIZE:
            memo.clear()
        answer = make(value)
        memo[id(value)] = (value, answer)
        return answer

    return lookup


def attribute(field: FieldDescriptor) -> str:
    """How generated code reads ``field`` of a message ``m`` (``pass`` is a
    Python keyword)."""
    name = field.name
    return (
        f"m.{name}"
        if name.isidentifier() and not keyword.iskeyword(name)
        else (f"getattr(m, {name!r})")
    )


# ---------------------------------------------------------------- building messages

_BUILDERS: dict[str, Callable[[Fields, Any], None]] = {}


def build(message: M, fields: Fields) -> M:
    """``message`` with ``fields`` set on it (in place); returns it."""
    _builder(cast(Descriptor, message.DESCRIPTOR))(fields, message)
    return message


def _shared_message(descriptor: Descriptor) -> Callable[[Any], Message]:
    """The message of a shared fields dict, made once and copied from (in C)
    by every message holding it; a message given passes through."""
    cls = _message_class(descriptor)
    fill = _builder(descriptor)

    def make(value: Any) -> Message:
        message = cls()
        fill(value, message)
        return message

    made = identity_memo(make)

    def lookup(value: Any) -> Message:
        return cast(Message, made(value)) if type(value) is dict else cast(Message, value)

    return lookup


def _message_class(descriptor: Descriptor) -> type[Message]:
    from google.protobuf import message_factory

    return message_factory.GetMessageClass(descriptor)


def _builder(descriptor: Descriptor) -> Callable[[Fields, Any], None]:
    """The function setting a fields dict on a message of ``descriptor``'s
    type: Python made from the descriptor, one statement per field."""
    found = _BUILDERS.get(descriptor.full_name)
    if found is not None:
        return found

    def later(fields: Fields, message: Any) -> None:  # a type holding itself
        _BUILDERS[descriptor.full_name](fields, message)

    _BUILDERS[descriptor.full_name] = later
    names: dict[str, Any] = {"dict": dict}
    lines = ["def fill(f, m):"]
    for field in descriptor.fields:
        read = f"f.get({field.name!r})"
        target = attribute(field)
        sub = field.message_type
        if sub is not None:
            if sub.GetOptions().map_entry:
                lines += [f"    v = {read}", "    if v:", f"        {target}.update(v)"]
                continue
            if sub.full_name in SHARED:
                name = "_s_" + sub.full_name.replace(".", "_")
                names[name] = _shared_message(sub)
                if field.is_repeated:
                    lines += [
                        f"    v = {read}",
                        "    if v:",
                        f"        {target}.extend(map({name}, v))",
                    ]
                else:
                    lines += [
                        f"    x = {read}",
                        "    if x is not None:",
                        f"        {target}.CopyFrom({name}(x))",
                    ]
                continue
            name = "_b_" + sub.full_name.replace(".", "_")
            names[name] = _builder(sub)
            if field.is_repeated:
                lines += [
                    f"    v = {read}",
                    "    if v:",
                    f"        add = {target}.add",
                    "        for x in v:",
                    "            if type(x) is dict:",
                    f"                {name}(x, add())",
                    "            else:",
                    "                add().CopyFrom(x)",
                ]
            else:
                lines += [
                    f"    x = {read}",
                    "    if x is not None:",
                    f"        s = {target}",
                    "        if type(x) is dict:",
                    "            s.SetInParent()",
                    f"            {name}(x, s)",
                    "        else:",
                    "            s.CopyFrom(x)",
                ]
        elif field.is_repeated:
            lines += [f"    v = {read}", "    if v:", f"        {target}.extend(v)"]
        else:
            test = "x is not None" if field.has_presence else "x"
            assign = (
                f"m.{field.name} = x"
                if target.startswith("m.")
                else f"setattr(m, {field.name!r}, x)"
            )
            lines += [f"    x = {read}", f"    if {test}:", f"        {assign}"]
    if len(lines) == 1:
        lines.append("    pass")
    # Made from our own descriptors, never from input, as dataclasses makes
    # __init__: one generic loop over the fields cost more.
    exec("\n".join(lines), names)
    fill = cast(Callable[[Fields, Any], None], names["fill"])
    _BUILDERS[descriptor.full_name] = fill
    return fill


def message_of(cls: type[M], value: Fields | M) -> M:
    """A message of type ``cls``: built from its fields, or the one given."""
    if isinstance(value, cls):
        return value
    assert not isinstance(value, Message), f"a {type(value).__name__} is not a {cls.__name__}"
    return build(cls(), value)
