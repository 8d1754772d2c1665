"""railyard_api.fields.SharedMemo: what each writer makes of the fields
dicts shared between views (a view's tiles and train references), made
once, found by identity or by the engine value they stand for, a list at a
time in C; and the messages and JSON written from them."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format

import engine
from engine import Tile, TrainKind, TrainRef
from railyard_api import convert, fields
from railyard_api import game_service_pb2 as pb
from railyard_api.fields import SharedMemo, build, share
from service.transports.http import jsonwire

TILE = "railyard.v1.Tile"


def _counting() -> tuple[SharedMemo, list[Any]]:
    made: list[Any] = []

    def make(value: Any) -> Any:
        made.append(value)
        return ("answer", value.get("a"))

    return SharedMemo(TILE, make), made


def test_a_shared_dict_is_answered_once_and_by_identity() -> None:
    memo, made = _counting()
    first, equal = share({"a": 1}), share({"a": 1})
    assert memo.get(first) == ("answer", 1)
    assert memo.get(first) == ("answer", 1)
    assert made == [first]
    assert memo.get(equal) == ("answer", 1)  # an equal dict is another dict
    assert len(made) == 2
    assert made[1] is equal


def test_a_dict_not_shared_is_answered_each_time_and_not_kept() -> None:
    """A request's own dicts (a move's tile) are not remembered: they would
    fill the memo, one a request."""
    memo, made = _counting()
    for _ in range(3):
        assert memo.get({"a": 2}) == ("answer", 2)
    assert len(made) == 3
    assert memo.answers == {}


def test_many_answers_as_get_whether_all_are_known_or_not() -> None:
    memo, made = _counting()
    tiles = [share({"a": n}) for n in range(5)]
    assert memo.many(tiles[:3]) == [("answer", n) for n in range(3)]  # all new
    assert memo.many(tiles) == [("answer", n) for n in range(5)]  # two new
    made.clear()
    assert memo.many(tiles) == [("answer", n) for n in range(5)]  # all known: in C
    assert memo.many(iter(tiles)) == [("answer", n) for n in range(5)]  # any iterable
    assert made == []


def test_an_engine_value_is_answered_by_its_value() -> None:
    memo, made = _counting()
    assert memo.of_values([Tile(6, 3), Tile(6, 3), Tile(3, 6)]) == [
        ("answer", 6),
        ("answer", 6),
        ("answer", 3),
    ]
    assert len(made) == 2  # (the tile table's dicts are shared)
    assert memo.of_value(Tile(6, 3)) == ("answer", 6)
    assert len(made) == 2


def test_past_its_limit_nothing_more_is_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fields, "MAX_SHARED", 0)
    memo, made = _counting()
    late = share({"a": 9})
    memo.get(late)
    memo.get(late)
    assert len(made) == 2  # still right, made each time


def _expected(seats: int) -> pb.GameView:
    return pb.GameView(
        version=seats,
        trains=[
            pb.TrainView(ref=pb.TrainRef(seat=0), tiles=[pb.Tile(a=6, b=6)] * seats),
            pb.TrainView(
                ref=pb.TrainRef(line=pb.TrainRef.Line()),
                tiles=[pb.Tile(a=6, b=n % 7) for n in range(seats)],
            ),
        ],
        open_doubles=[pb.OpenDouble(train=pb.TrainRef(mexican=1, end=2), value=4)],
        hand=[pb.Tile(a=6, b=6), pb.Tile()],
    )


@pytest.mark.parametrize("given", ["fields", "engine"])
def test_shared_and_engine_values_write_the_same_message_and_json(given: str) -> None:
    """A view whose trains are given as fields dicts (shared tiles and
    references, and a request's own) or as the engine's values: each
    writer, many views over, gives what the messages give."""
    tile = convert._TILES[Tile(6, 6)]
    ref = convert._ref_fields(TrainRef(TrainKind.SEAT, 0))
    for seats in range(1, 12):
        if given == "fields":
            trains: Any = [
                {"ref": ref, "tiles": [tile] * seats},
                {"ref": {"line": {}}, "tiles": [{"a": 6, "b": n % 7} for n in range(seats)]},
            ]
            doubles: Any = [{"train": {"mexican": 1, "end": 2}, "value": 4}]
        else:
            trains = [
                engine.view.TrainView(
                    TrainRef(TrainKind.SEAT, 0), (Tile(6, 6),) * seats, (), False, ()
                ),
                engine.view.TrainView(
                    TrainRef(TrainKind.LINE, 0),
                    tuple(Tile(6, n % 7) for n in range(seats)),
                    (),
                    False,
                    (),
                ),
            ]
            doubles = [engine.view.OpenDoubleView(TrainRef(TrainKind.MEXICAN, 1, 2), 4, 0)]
        view = {
            "version": seats,
            "trains": trains,
            "open_doubles": doubles,
            "hand": [tile, {"a": 0, "b": 0}],
        }
        assert build(pb.GameView(), view) == _expected(seats)
        assert jsonwire.fields_to_dict(pb.GameView.DESCRIPTOR, view) == (
            json_format.MessageToDict(_expected(seats))
        )
