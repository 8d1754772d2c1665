"""A protobuf GameView as the engine's own view type, for the engine's bots.

Only :mod:`railyard_client.bot`'s ``--level`` imports this, and only where
the engine (the ``railyard`` package) is installed: the client itself never
needs it. Every field comes from the seat's view, so the bot sees what the
seat sees and nothing more (MT-VIS-3).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import engine.bots
from engine.game import GameStatus
from engine.moves import TrainKind, TrainRef
from engine.tiles import Tile
from engine.view import (
    BranchView,
    GameView,
    LineView,
    OpenDoubleView,
    PlayerView,
    TeamView,
    TrainView,
    TurnView,
)
from google.protobuf.message import Message
from service.api import game_service_pb2 as service_pb
from service.app import convert

from railyard_client.api import game_service_pb2 as pb

M = TypeVar("M", bound=Message)


def as_service(message: Message, into: M) -> M:
    """The service's class of a message (the same .proto, generated twice)."""
    into.ParseFromString(message.SerializeToString())
    return into


def _ref(message: pb.TrainRef) -> TrainRef:
    target = message.WhichOneof("target")
    if target == "mexican":
        return TrainRef(TrainKind.MEXICAN, message.mexican, message.end)
    if target == "line":
        return TrainRef(TrainKind.LINE, 0, message.end)
    return TrainRef(TrainKind.SEAT, message.seat, message.end)


def _tiles(tiles: object) -> tuple[Tile, ...]:
    # Train tiles keep their orientation ({touching, open}): built as given.
    return tuple(Tile(t.a, t.b) for t in tiles)  # type: ignore[attr-defined]


def to_engine(view: pb.GameView) -> GameView:
    finished = view.status == pb.GAME_STATUS_FINISHED
    return GameView(
        version=view.version,
        status=GameStatus.FINISHED if finished else GameStatus.IN_PROGRESS,
        over=finished,
        ruleset=convert.ruleset_from_proto(as_service(view.ruleset, service_pb.Ruleset())),
        round=view.round,
        rounds_total=view.rounds_total,
        engine=Tile(view.engine.a, view.engine.b) if view.HasField("engine") else None,
        current_seat=view.current_seat if view.HasField("current_seat") else None,
        boneyard_count=view.boneyard_count,
        players=tuple(
            PlayerView(p.seat, p.hand_count, p.marker, p.score, tuple(p.round_scores))
            for p in view.players
        ),
        trains=tuple(
            TrainView(
                _ref(t.ref),
                _tiles(t.tiles),
                tuple(t.open_ends),
                t.marker,
                tuple(
                    BranchView(
                        b.end,
                        b.parent_end if b.HasField("parent_end") else None,
                        _tiles(b.tiles),
                        b.open_end if b.HasField("open_end") else None,
                    )
                    for b in t.branches
                ),
            )
            for t in view.trains
        ),
        open_doubles=tuple(
            OpenDoubleView(_ref(d.train), d.value, d.answers) for d in view.open_doubles
        ),
        turn=None
        if finished
        else TurnView(view.turn.owes_tile, view.turn.drew_this_turn, view.turn.first_turn),
        hand=_tiles(view.hand) if view.HasField("viewer_seat") else None,
        viewer_seat=view.viewer_seat if view.HasField("viewer_seat") else None,
        seed_sha256=view.seed_sha256,
        seed=view.seed or None,
        winners=tuple(view.winners),
        line=LineView(_tiles(view.line.tiles), tuple(view.line.open_ends))
        if view.HasField("line")
        else None,
        teams=tuple(TeamView(tuple(t.seats), t.score) for t in view.teams),
        target_score=view.target_score,
    )


def chooser(
    level: str, budget: int | None = None
) -> Callable[[pb.GameView, Sequence[pb.LegalMove]], pb.LegalMove]:
    """``choose(view, legal)`` by the engine's bot ``level`` (random, greedy, expert)."""

    def choose(view: pb.GameView, legal: Sequence[pb.LegalMove]) -> pb.LegalMove:
        moves = [
            convert.move_from_proto(as_service(entry.move, service_pb.Move())) for entry in legal
        ]
        picked = engine.bots.choose(level, to_engine(view), moves, budget=budget)
        return legal[moves.index(picked)]

    return choose
