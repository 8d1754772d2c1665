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
- a message is a fields dict of its own, a message of its type (a
  well-known type such as a Timestamp, or a message built before), or an
  engine value: one whose attributes are named as the message's fields (a
  view's trains, read as they are, with no dict made of them), or one
  :func:`adapt` says how to write (a tile, a train reference);
- a list is any sequence.

Dicts of :data:`SHARED` types made by :func:`share` (a tile) are shared
between many views and looked up by identity, so each is filled into a
message once. Nothing may change a fields dict once made.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, TypeVar, cast

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

M = TypeVar("M", bound=Message)
Fields = Mapping[str, Any]

#: Message types whose fields dicts may be shared (:func:`share`): a view's
#: tiles and train references, taken from tables of every one
#: (railyard_api.convert), are most of a view. Trains are not: kept between
#: views, the memo of a server's thousands of trains cost it more than it
#: saved (docs/performance.md).
SHARED: Final = frozenset({"railyard.v1.Tile", "railyard.v1.TrainRef"})
#: At most this many dicts are shared; past it a dict is written each time.
MAX_SHARED: Final = 1 << 16

#: The shared dicts by id, kept for good: no other object can take the id
#: of one, so a writer may remember what it made of it by its id.
_SHARED_DICTS: dict[int, Fields] = {}

F = TypeVar("F", bound=Fields)


def share(fields: F) -> F:
    """``fields``, from now on shared between the views that hold it: kept
    for good, never changed, and filled into a message (or written as JSON)
    once by each writer (:class:`SharedMemo`). Only dicts of :data:`SHARED`
    types gain by it."""
    if len(_SHARED_DICTS) < MAX_SHARED:
        _SHARED_DICTS[id(fields)] = fields
    return fields


class SharedMemo:
    """What a writer makes of each shared fields dict (:func:`share`) of
    message type ``full_name``, made once and found by the dict's id
    (:meth:`get`); any other value (a dict not shared, as a request's own,
    or a message) goes to ``make`` each time. An engine value standing for
    such a message (:data:`ADAPTERS`) is found by its value
    (:meth:`of_value`). Lists are read in C once every item is known
    (:meth:`many`, :meth:`of_values`)."""

    __slots__ = ("_full_name", "_make", "answers", "by_value")

    def __init__(self, full_name: str, make: Callable[[Any], Any]) -> None:
        self._full_name = full_name
        self._make = make
        #: Each shared dict's answer by the dict's id (never None).
        self.answers: dict[int, Any] = {}
        #: Each engine value's answer, when its fields are a shared dict.
        self.by_value: dict[Any, Any] = {}

    def get(self, value: Any) -> Any:
        found = self.answers.get(id(value))
        if found is None:
            found = self._make(value)
            if id(value) in _SHARED_DICTS:
                self.answers[id(value)] = found
        return found

    def many(self, values: Iterable[Any]) -> list[Any]:
        """:meth:`get` of each of ``values``."""
        if type(values) is not list and type(values) is not tuple:
            values = list(values)
        try:
            return list(map(self.answers.__getitem__, map(id, values)))
        except KeyError:
            return list(map(self.get, values))

    def of_value(self, value: Any) -> Any:
        """The answer for an engine value (hashable, as a tile)."""
        found = self.by_value.get(value)
        if found is None:
            fields = ADAPTERS[self._full_name](value)
            found = self.get(fields)
            if id(fields) in _SHARED_DICTS and len(self.by_value) < MAX_SHARED:
                self.by_value[value] = found
        return found

    def of_values(self, values: Sequence[Any]) -> list[Any]:
        """:meth:`of_value` of each of ``values``."""
        try:
            return list(map(self.by_value.__getitem__, values))
        except KeyError:
            return list(map(self.of_value, values))


def attribute(field: FieldDescriptor, of: str = "m") -> str:
    """How generated code reads ``field`` of a message (or an engine value)
    named ``of`` (``pass`` is a Python keyword)."""
    name = field.name
    return (
        f"{of}.{name}"
        if name.isidentifier() and not keyword.iskeyword(name)
        else (f"getattr({of}, {name!r})")
    )


# ---------------------------------------------------------------- engine values

#: Per message type, how an engine value stands for one of its messages when
#: its attributes are not the message's fields: the value -> its fields
#: (railyard_api.convert registers a tile's and a train reference's).
ADAPTERS: dict[str, Callable[[Any], Fields]] = {}


def adapt(full_name: str, to_fields: Callable[[Any], Fields]) -> None:
    """Engine values given for a message of type ``full_name`` are written
    as ``to_fields`` of them."""
    ADAPTERS[full_name] = to_fields


def lazily(scope: dict[str, Any], name: str, make: Callable[[], Any]) -> Callable[..., Any]:
    """A stand-in for ``scope[name]`` in generated code, made by ``make``
    when first called (then put in its place): a writer of engine values is
    made once they are met, when the adapters they need are registered."""

    def first(*args: Any) -> Any:
        made = scope[name] = make()
        return made(*args)

    return first


# ---------------------------------------------------------------- building messages

#: Each message type's builders, made once: of fields dicts (False) and of
#: engine values read by attribute (True).
_BUILDERS: dict[tuple[str, bool], Callable[[Any, Any], None]] = {}


def build(message: M, fields: Fields) -> M:
    """``message`` with ``fields`` set on it (in place); returns it."""
    _builder(cast(Descriptor, message.DESCRIPTOR), False)(fields, message)
    return message


#: Per shared message type, the messages of its shared fields dicts.
_SHARED_MESSAGES: dict[str, SharedMemo] = {}


def _shared_message(descriptor: Descriptor) -> SharedMemo:
    """The messages of shared fields dicts, each made once and copied from
    (in C) by every message holding it; a message given passes through."""
    found = _SHARED_MESSAGES.get(descriptor.full_name)
    if found is not None:
        return found
    cls = _message_class(descriptor)
    fill = _builder(descriptor, False)

    def make(value: Any) -> Message:
        if isinstance(value, Message):
            return value
        if type(value) is not dict and descriptor.full_name in ADAPTERS:
            return cast(Message, memo.of_value(value))
        message = cls()
        if type(value) is dict:
            fill(value, message)
        else:
            _builder(descriptor, True)(value, message)
        return message

    memo: SharedMemo
    memo = _SHARED_MESSAGES[descriptor.full_name] = SharedMemo(descriptor.full_name, make)
    return memo


def _message_class(descriptor: Descriptor) -> type[Message]:
    from google.protobuf import message_factory

    return message_factory.GetMessageClass(descriptor)


def _builder(descriptor: Descriptor, objects: bool) -> Callable[[Any, Any], None]:
    """The function setting a fields dict (``objects``: an engine value's
    attributes of the fields' names) on a message of ``descriptor``'s type:
    Python made from the descriptor, one statement per field."""
    key = (descriptor.full_name, objects)
    found = _BUILDERS.get(key)
    if found is not None:
        return found

    def later(fields: Any, message: Any) -> None:  # a type holding itself
        _BUILDERS[key](fields, message)

    _BUILDERS[key] = later
    names: dict[str, Any] = {"dict": dict, "id": id, "Message": Message, "shared": _SHARED_DICTS}
    lines = ["def fill(f, m):"]
    for field in descriptor.fields:
        read = attribute(field, "f") if objects else f"f.get({field.name!r})"
        target = attribute(field)
        sub = field.message_type
        if sub is not None:
            if sub.GetOptions().map_entry:
                lines += [f"    v = {read}", "    if v:", f"        {target}.update(v)"]
                continue
            lines += _sub_message(field, sub, read, target, objects, names)
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
    fill = cast(Callable[[Any, Any], None], names["fill"])
    _BUILDERS[key] = fill
    return fill


def _sub_message(
    field: FieldDescriptor,
    sub: Descriptor,
    read: str,
    target: str,
    objects: bool,
    names: dict[str, Any],
) -> list[str]:
    """The statements setting ``field``, of message type ``sub``."""
    tag = sub.full_name.replace(".", "_")
    if sub.full_name in SHARED:
        memo = _shared_message(sub)
        names["_s_" + tag] = memo.get
        if objects and sub.full_name in ADAPTERS:  # (found by value, in C)
            names["_s_many_" + tag] = memo.of_values
            names["_s_" + tag] = memo.of_value
        else:
            names["_s_many_" + tag] = memo.many
        if field.is_repeated:
            return [f"    v = {read}", "    if v:", f"        {target}.extend(_s_many_{tag}(v))"]
        if objects:
            return [
                f"    x = {read}",
                "    if x is not None:",
                f"        {target}.CopyFrom(_s_{tag}(x))",
            ]
        # A dict not shared (a request's own) is filled in place, as any.
        names["_b_" + tag] = _builder(sub, False)
        return [
            f"    x = {read}",
            "    if x is not None:",
            f"        s = {target}",
            "        if type(x) is dict and id(x) not in shared:",
            "            s.SetInParent()",
            f"            _b_{tag}(x, s)",
            "        else:",
            f"            s.CopyFrom(_s_{tag}(x))",
        ]
    names["_b_" + tag] = _builder(sub, False)
    names["_o_" + tag] = lazily(names, "_o_" + tag, lambda: _builder(sub, True))
    # A fields dict, a message or an engine value, whichever was given (an
    # engine value holds engine values: its checks fail at once).
    if field.is_repeated:
        return [
            f"    v = {read}",
            "    if v:",
            f"        add = {target}.add",
            "        for x in v:",
            "            if type(x) is dict:",
            f"                _b_{tag}(x, add())",
            "            elif isinstance(x, Message):",
            "                add().CopyFrom(x)",
            "            else:",
            f"                _o_{tag}(x, add())",
        ]
    return [
        f"    x = {read}",
        "    if x is not None:",
        f"        s = {target}",
        "        if type(x) is dict:",
        "            s.SetInParent()",
        f"            _b_{tag}(x, s)",
        "        elif isinstance(x, Message):",
        "            s.CopyFrom(x)",
        "        else:",
        "            s.SetInParent()",
        f"            _o_{tag}(x, s)",
    ]


def message_of(cls: type[M], value: Fields | M) -> M:
    """A message of type ``cls``: built from its fields, or the one given."""
    if isinstance(value, cls):
        return value
    assert not isinstance(value, Message), f"a {type(value).__name__} is not a {cls.__name__}"
    return build(cls(), value)
