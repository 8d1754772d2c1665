"""The fast ApplyMove body parser of the HTTP transport either fills exactly
the message json_format.ParseDict would, or declines and leaves the body to
ParseDict (which explains what is wrong): checked on hand-picked bodies and on
random JSON shaped like moves."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format
from hypothesis import given, settings
from hypothesis import strategies as st

from railyard_api import game_service_pb2 as pb
from service.transports.http.server import fast_apply_move


def _parse_dict(data: dict[str, Any]) -> pb.ApplyMoveRequest | None:
    try:
        return json_format.ParseDict(data, pb.ApplyMoveRequest())
    except (json_format.ParseError, ValueError, TypeError):
        return None


def _check(data: dict[str, Any]) -> bool:
    message = pb.ApplyMoveRequest()
    taken = fast_apply_move(data, message)
    expected = _parse_dict(data)
    if taken:
        assert expected is not None, f"fast path took a body ParseDict refuses: {data}"
        assert message == expected, data
    else:
        assert message == pb.ApplyMoveRequest(), "a declined body must leave the message empty"
    return taken


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
    ],
)
def test_canonical_bodies_take_the_fast_path(data: dict[str, Any]) -> None:
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
        {"move": {"draw": {}}, "gameId": "x"},
        {"move": {"play": {"announceLastTile": 1}}},
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
