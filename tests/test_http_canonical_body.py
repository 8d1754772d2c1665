"""The HTTP transport's reader of canonical bodies (jsonwire.canonical_fields)
either reads exactly the message json_format.ParseDict would, or declines and
leaves the body to ParseDict (which reads other spellings and explains what
is wrong): checked on hand-picked bodies, on random JSON shaped like moves,
and on the JSON of random requests of every kind."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format
from google.protobuf.message import Message
from hypothesis import given, settings
from hypothesis import strategies as st

from railyard_api import game_service_pb2 as pb
from railyard_api.fields import build
from service.transports.http.jsonwire import canonical_fields


def _parse_dict(data: dict[str, Any], cls: type[Message]) -> Message | None:
    try:
        return json_format.ParseDict(data, cls())
    except (json_format.ParseError, ValueError, TypeError):
        return None


def _check(data: dict[str, Any], cls: type[Message] = pb.ApplyMoveRequest) -> bool:
    """Whether the reader took ``data``; if it did, its message is ParseDict's."""
    fields = canonical_fields(cls.DESCRIPTOR, data)
    expected = _parse_dict(data, cls)
    if fields is not None:
        assert expected is not None, f"the reader took a body ParseDict refuses: {data}"
        got = build(cls(), fields)
        assert got == expected, data
        # Presence too (an empty message given, an optional 0).
        assert got.SerializeToString(deterministic=True) == expected.SerializeToString(
            deterministic=True
        ), data
    return fields is not None


@pytest.mark.parametrize(
    "data",
    [
        {"move": {"play": {"tile": {"a": 5, "b": 12}, "train": {"seat": 2}}}},
        {"move": {"play": {"tile": {"b": 12}, "train": {"seat": 0}}}, "expectedVersion": "0"},
        {"move": {"play": {"tile": {"a": 3, "b": 3}, "train": {"mexican": 1, "end": 2}}}},
        {"move": {"play": {"tile": {"a": 1, "b": 2}, "train": {"line": {}}}}},
        {
            "move": {"play": {"tile": {"a": 1}, "train": {}, "announceLastTile": True}},
            "expectedVersion": 41,
            "requestId": "r-1",
        },
        {"move": {"draw": {}}, "expectedVersion": "-3"},
        {"move": {"pass": {}}},
        {"move": {"endTurn": {}}, "requestId": ""},
        # (The route refuses a gameId in the body; the reader reads it.)
        {"move": {"draw": {}}, "gameId": "x"},
        {"move": {"play": {"tile": {"a": 1}, "train": {"seat": 0}, "exposed": 0}}},
    ],
)
def test_canonical_bodies_are_read(data: dict[str, Any]) -> None:
    assert _check(data)


@pytest.mark.parametrize(
    "data",
    [
        {"move": {"play": {"tile": {"a": 5, "b": 12}, "train": {"seat": 2, "mexican": 1}}}},
        {"move": {"play": {"tile": {"a": "5", "b": 12}, "train": {"seat": 2}}}},
        {"move": {"play": {"tile": {"a": -1, "b": 12}}}},
        {"move": {"play": {"tile": {"a": True}}}},
        {"move": {"play": {"tile": {"a": 2**32}}}},
        {"move": {"play": {"tile": {"a": 1.0}}}},
        {"move": {"play": {"tile": {"a": 1}, "train": {"line": {"x": 1}}}}},
        {"move": {"play": {"tile": {"a": 1}, "extra": 1}}},
        {"move": {"play": {"tile": {"a": 1}}, "draw": {}}},
        {"move": {"draw": {"x": 1}}},
        {"move": {"draw": None}},
        {"move": None},
        {"move": {"end_turn": {}}},
        {"move": {"draw": {}}, "expected_version": "3"},
        {"move": {"draw": {}}, "expectedVersion": "3.0"},
        {"move": {"draw": {}}, "expectedVersion": str(2**63)},
        {"move": {"draw": {}}, "expectedVersion": True},
        {"move": {"draw": {}}, "expectedVersion": None},
        {"move": {"draw": {}}, "requestId": 5},
        {"move": {"play": {"announceLastTile": 1}}},
        {"move": {"play": {"tile": {"a": 1}}}, "expectedVersion": "007x"},
    ],
)
def test_other_bodies_are_left_to_parse_dict(data: dict[str, Any]) -> None:
    assert not _check(data)


_JSON_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["", "5", "-7", "x", "12.0", str(2**63)]),
)


def _maybe(keys: list[str], values: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from(keys), values, max_size=len(keys))


_ANY = st.recursive(
    _JSON_LEAF,
    lambda inner: st.dictionaries(st.sampled_from(["a", "b", "seat", "x"]), inner, max_size=2),
    max_leaves=4,
)
_INTS = st.one_of(st.integers(min_value=-2, max_value=2**32 + 1), _ANY)
_TRAIN = _maybe(["seat", "mexican", "line", "end", "x"], st.one_of(_INTS, st.just({})))
_TILE = _maybe(["a", "b", "c"], _INTS)
_PLAY = _maybe(
    ["tile", "train", "announceLastTile", "x"],
    st.one_of(_TILE, _TRAIN, st.booleans(), _ANY),
)
_MOVE = st.one_of(
    st.builds(lambda p: {"play": p}, _PLAY),
    st.sampled_from(
        [{"draw": {}}, {"pass": {}}, {"endTurn": {}}, {"end_turn": {}}, {"draw": {"a": 1}}]
    ),
    _ANY,
)
_BODY = _maybe(
    ["move", "expectedVersion", "requestId", "request_id"],
    st.one_of(_MOVE, _INTS, st.text(max_size=3)),
)


@settings(max_examples=600, deadline=None)
@given(_BODY)
def test_random_bodies_parse_as_parse_dict_would(data: dict[str, Any]) -> None:
    _check(data)


_REQUESTS = (pb.CreateGameRequest, pb.ApplyMoveRequest, pb.WatchGameRequest, pb.Ruleset)


def _random_message(cls: type[Message], draw: st.DrawFn, depth: int = 0) -> Message:
    """A random message of ``cls``: every kind of field set or not, oneofs
    and optionals with zeros, enums by any of their numbers."""
    message = cls()
    for field in cls.DESCRIPTOR.fields:
        if not draw(st.booleans()):
            continue
        count = draw(st.integers(0, 2)) if field.is_repeated else 1
        for _ in range(count):
            if field.message_type is not None:
                if depth > 3:
                    continue
                sub_cls = type(getattr(cls(), field.name).add()) if field.is_repeated else None
                sub = _random_message(
                    sub_cls or type(getattr(message, field.name)), draw, depth + 1
                )
                if field.is_repeated:
                    getattr(message, field.name).add().CopyFrom(sub)
                else:
                    getattr(message, field.name).CopyFrom(sub)
                continue
            if field.enum_type is not None:
                value: Any = draw(st.sampled_from([v.number for v in field.enum_type.values]))
            elif field.type == field.TYPE_BOOL:
                value = draw(st.booleans())
            elif field.type == field.TYPE_STRING:
                value = draw(st.text(max_size=4))
            elif field.type in (field.TYPE_INT64, field.TYPE_SINT64, field.TYPE_SFIXED64):
                value = draw(st.integers(-(2**63), 2**63 - 1))
            elif field.type in (field.TYPE_UINT64, field.TYPE_FIXED64):
                value = draw(st.integers(0, 2**64 - 1))
            elif field.type in (field.TYPE_INT32, field.TYPE_SINT32, field.TYPE_SFIXED32):
                value = draw(st.integers(-(2**31), 2**31 - 1))
            else:
                value = draw(st.integers(0, 2**32 - 1))
            if field.is_repeated:
                getattr(message, field.name).append(value)
            else:
                setattr(message, field.name, value)
    return message


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(_REQUESTS), st.data())
def test_random_requests_are_read_as_written(cls: type[Message], data: st.DataObject) -> None:
    """The canonical JSON of any request, as MessageToDict writes it, is
    read back to the same message."""
    message = _random_message(cls, data.draw)
    as_json = json_format.MessageToDict(message)
    assert _check(as_json, cls), as_json
    assert build(cls(), canonical_fields(cls.DESCRIPTOR, as_json) or {}) == message
