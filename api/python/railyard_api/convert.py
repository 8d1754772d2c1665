"""Engine values <-> railyard.v1 messages. Pure functions, no I/O.

The one place that knows both vocabularies: rulesets (preset + optional
overrides), moves, views and events; the service writes its answers with it
and the client's bots read the service's views with it. Views and events
are converted from the engine's own seat-filtered values, so nothing hidden
can slip in here. Needs the engine (``pip install 'railyard-api[engine]'``).

A message that names no engine value (an unknown enum number, a move with
no action) is a :class:`ConversionError`; the service answers it
INVALID_ARGUMENT with its ``metadata``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Final

from google.protobuf.descriptor import EnumDescriptor, FieldDescriptor

import engine
from engine import Move, MoveKind, Tile, TrainKind, TrainRef
from engine.game import GameStatus
from engine.tiles import MAX_SET
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
from railyard_api import game_service_pb2 as pb
from railyard_api.fields import Fields, adapt, build, share


class ConversionError(ValueError):
    """A message that names no engine value; ``metadata`` says where
    (``field``) and which rule (``rule``) when known."""

    def __init__(self, message: str, **metadata: str) -> None:
        super().__init__(message)
        self.message = message
        self.metadata = metadata


def invalid(message: str, **metadata: str) -> ConversionError:
    return ConversionError(message, **metadata)


#: The Ruleset message's fields by option name: a field is named as the
#: option it holds (RULES.md's snake_case names), so each game's rules type
#: maps to it field by field, with no table per game.
_RULESET_FIELDS: Final[dict[str, FieldDescriptor]] = dict(pb.Ruleset.DESCRIPTOR.fields_by_name)


def _enum_prefix(enum: EnumDescriptor) -> str:
    """``HAND_SIZE_TABLE`` for HandSizeTable: its values are ``<PREFIX>_<VALUE>``
    (Buf's ENUM_VALUE_PREFIX), the engine's the lowercase ``<value>``."""
    return enum.values_by_number[0].name.removesuffix("_UNSPECIFIED")


def _enum_option(name: str, enum: EnumDescriptor, number: int) -> str:
    """The engine's value of an enum field, refusing an unknown or unspecified one."""
    value = enum.values_by_number.get(number)
    if value is None or number == 0:
        known = [v.name for v in enum.values][1:]
        raise invalid(f"{name} {number} is not one of {known}", field=f"ruleset.{name}")
    return value.name[len(_enum_prefix(enum)) + 1 :].lower()


#: What ruleset_from_proto admits, for the OpenAPI schema (service.transports.http.field_limits):
#: the games played (Game numbers, by the registry), and the enum options
#: (any of their values but the zero one).
GAMES_PLAYED: Final = {pb.Game.Value(f"GAME_{name.upper()}"): name for name in engine.GAMES}
RULESET_ENUMS: Final = tuple(
    name for name, field in _RULESET_FIELDS.items() if field.enum_type and name != "game"
)


_DRAW_REASON: Final = {
    "move": pb.DRAW_REASON_MOVE,
    "penalty": pb.DRAW_REASON_PENALTY,
    "engine_search": pb.DRAW_REASON_ENGINE_SEARCH,
}
_STATUS: Final = {
    engine.GameStatus.IN_PROGRESS: pb.GAME_STATUS_IN_PROGRESS,
    engine.GameStatus.FINISHED: pb.GAME_STATUS_FINISHED,
}
_POINTS_REASON: Final = {
    reason: pb.PointsReason.Value(f"POINTS_REASON_{reason.value.upper()}")
    for reason in engine.PointsReason
}
_END_REASON: Final = {
    engine.RoundEndReason.DOMINO: pb.ROUND_END_REASON_DOMINO,
    engine.RoundEndReason.BLOCKED: pb.ROUND_END_REASON_BLOCKED,
}


# ---------------------------------------------------------------- rulesets


def ruleset_from_proto(message: pb.Ruleset) -> engine.Rules:
    """The preset named (or ``game``'s own, or ``standard``) with every field
    that is set; the game's rules type refuses an option it does not have."""
    preset = message.preset if message.HasField("preset") else None
    game = None
    options: dict[str, Any] = {}
    for field, value in message.ListFields():
        if field.name == "preset":
            continue
        enum = field.enum_type
        option = value if enum is None else _enum_option(field.name, enum, value)
        if field.name == "game":
            game = option
        else:
            options[field.name] = option
    return engine.ruleset(preset, game, **options)


def ruleset_to_proto(ruleset: engine.Rules) -> pb.Ruleset:
    """Every option of ``ruleset``; options still following the player count
    (``None``) are left out."""
    message = pb.Ruleset()
    for name, value in ruleset.to_dict().items():
        if value is None:
            continue
        enum = _RULESET_FIELDS[name].enum_type
        if enum is not None:
            value = enum.values_by_name[f"{_enum_prefix(enum)}_{value.upper()}"].number
        setattr(message, name, value)
    return message


@functools.lru_cache(maxsize=256)
def _ruleset_message(ruleset: engine.Rules) -> pb.Ruleset:
    # Every view carries its resolved ruleset; a game has one, so build it once.
    # (Callers copy it into their message; it is never mutated.)
    return ruleset_to_proto(ruleset)


# ---------------------------------------------------------------- moves


def _tile_fields(a: int, b: int) -> Fields:
    return {"a": a, "b": b}


def tile_to_proto(tile: Tile) -> pb.Tile:
    return pb.Tile(a=tile.a, b=tile.b)


def train_to_proto(ref: TrainRef) -> pb.TrainRef:
    if ref.kind is TrainKind.SEAT:
        return pb.TrainRef(seat=ref.number, end=ref.end)
    if ref.kind is TrainKind.MEXICAN:
        return pb.TrainRef(mexican=ref.number, end=ref.end)
    return pb.TrainRef(line=pb.TrainRef.Line(), end=ref.end)


def train_from_proto(message: pb.TrainRef) -> TrainRef:
    target = message.WhichOneof("target")
    if target == "seat":
        return TrainRef(TrainKind.SEAT, message.seat, message.end)
    if target == "mexican":
        return TrainRef(TrainKind.MEXICAN, message.mexican, message.end)
    if target == "line":
        return TrainRef(TrainKind.LINE, 0, message.end)
    raise invalid("a train names seat, mexican or line")


def move_from_proto(message: pb.Move) -> Move:
    """The engine move for ``message``; a message with no action is refused."""
    action = message.WhichOneof("action")
    if action == "play":
        play = message.play
        if not play.HasField("tile") or not play.HasField("train"):
            raise invalid("a play names a tile and a train", rule="T-2")
        # (Each read of a sub-message makes a new Python object of it.)
        a, b = (given := play.tile).a, given.b
        if a > MAX_SET or b > MAX_SET:
            raise invalid(f"{a}-{b} is not a tile: halves go up to {MAX_SET}")
        tile = Tile.of(a, b)
        exposed = play.exposed if play.HasField("exposed") else None  # CL-MAT-1
        return Move(
            MoveKind.PLAY, tile, train_from_proto(play.train), play.announce_last_tile, exposed
        )
    if action == "draw":
        return engine.DRAW
    if action == "pass":
        return engine.PASS
    if action == "end_turn":
        return engine.END_TURN
    raise invalid("the move has no action: give play, draw, pass or endTurn")


def move_to_proto(move: Move) -> pb.Move:
    if move.kind is MoveKind.PLAY:
        assert move.tile is not None
        assert move.train is not None
        return pb.Move(
            play=pb.Move.Play(
                tile=tile_to_proto(move.tile),
                train=train_to_proto(move.train),
                announce_last_tile=move.announce,
                exposed=move.exposed,
            )
        )
    if move.kind is MoveKind.DRAW:
        return pb.Move(draw=pb.Move.Draw())
    if move.kind is MoveKind.PASS:
        message = pb.Move()
        getattr(message, "pass").SetInParent()  # `pass` is a Python keyword
        return message
    return pb.Move(end_turn=pb.Move.EndTurn())


# ---------------------------------------------------------------- views

#: Every oriented tile (``a > b`` in trains too) as its fields, shared by
#: every view (railyard_api.fields.share): tiles are most of a view.
_TILES: Final = {Tile(a, b): share(_tile_fields(a, b)) for a in range(32) for b in range(32)}


@functools.lru_cache(maxsize=1024)
def _ref_fields(ref: TrainRef) -> Fields:
    # Shared by every view (railyard_api.fields.share): a game has a few.
    if ref.kind is TrainKind.SEAT:
        out: dict[str, Any] = {"seat": ref.number}
    elif ref.kind is TrainKind.MEXICAN:
        out = {"mexican": ref.number}
    else:
        out = {"line": {}}
    if ref.end:
        out["end"] = ref.end
    return share(out)


# The engine's tiles and train references are written as these fields; the
# rest of a view's parts (trains and their branches, open doubles, the turn,
# the line, teams) have the fields' names as attributes and are written as
# they are, with no fields dict made of them (railyard_api.fields.adapt).
adapt("railyard.v1.Tile", _TILES.__getitem__)
adapt("railyard.v1.TrainRef", _ref_fields)


def _tiles(tiles: Sequence[Tile]) -> list[Fields]:
    return list(map(_TILES.__getitem__, tiles))  # (a loop in C)


def view_fields(
    view: GameView,
    game_id: str,
    names: Sequence[str],
    bots: Sequence[int],
    seed_from_caller: bool = False,
) -> dict[str, Any]:
    """The GameView of an engine view (already filtered for its viewer) as
    its fields (railyard_api.fields), which gRPC builds its message from and
    HTTP writes as JSON: the one description of a view on the wire. The
    parts of the engine's view named as their messages' fields are given
    as they are (no dict of each train made only to be read once)."""
    return {
        "game_id": game_id,
        "version": view.version,
        "status": _STATUS[view.status],
        "ruleset": _ruleset_message(view.ruleset),
        "round": view.round,
        "rounds_total": view.rounds_total,
        "engine": None if view.engine is None else _TILES[view.engine],
        "current_seat": view.current_seat,
        "boneyard_count": view.boneyard_count,
        "players": [
            {
                "seat": p.seat,
                "display_name": names[p.seat],
                "hand_count": p.hand_count,
                "marker": p.marker,
                "score": p.score,
                "round_scores": p.round_scores,
                "bot": bots[p.seat],
            }
            for p in view.players
        ],
        # The engine's own values (TrainView, OpenDoubleView, TurnView): a
        # train's branches are MT-DBL-7's, their optional ends unset when
        # None.
        "trains": view.trains,
        "open_doubles": view.open_doubles,
        "turn": view.turn,
        # The seat's own view only.
        "hand": _tiles(view.hand) if view.hand else None,
        "viewer_seat": view.viewer_seat,
        "seed_sha256": view.seed_sha256,
        "seed": view.seed,
        "winners": view.winners,
        "seed_from_caller": seed_from_caller,
        # The classic games (API.md): there before the opening too.
        "line": view.line,
        "teams": view.teams,
        "target_score": view.target_score,
    }


def view_to_proto(
    view: GameView,
    game_id: str,
    names: Sequence[str],
    bots: Sequence[int],
    seed_from_caller: bool = False,
    into: pb.GameView | None = None,
) -> pb.GameView:
    """The GameView message of an engine view (:func:`view_fields`), written
    into ``into`` when given (a response's field: no copy)."""
    message = pb.GameView() if into is None else into
    return build(message, view_fields(view, game_id, names, bots, seed_from_caller))


def _set_ref(message: pb.TrainRef, ref: TrainRef) -> None:
    if ref.kind is TrainKind.SEAT:
        message.seat = ref.number
    elif ref.kind is TrainKind.MEXICAN:
        message.mexican = ref.number
    else:
        message.line.SetInParent()
    if ref.end:
        message.end = ref.end


def _ref_from_proto(message: pb.TrainRef) -> TrainRef:
    target = message.WhichOneof("target")
    if target == "mexican":
        return TrainRef(TrainKind.MEXICAN, message.mexican, message.end)
    if target == "line":
        return TrainRef(TrainKind.LINE, 0, message.end)
    return TrainRef(TrainKind.SEAT, message.seat, message.end)


def _tiles_from_proto(tiles: object) -> tuple[Tile, ...]:
    # Train tiles keep their orientation ({touching, open}): built as given.
    return tuple(Tile(t.a, t.b) for t in tiles)  # type: ignore[attr-defined]


def view_from_proto(view: pb.GameView) -> GameView:
    """The engine's view type of a wire view (a seat's or a spectator's): what
    an engine bot reads. Every field comes from the view, so a bot sees what
    its seat sees and nothing more (MT-VIS-3)."""
    finished = view.status == pb.GAME_STATUS_FINISHED
    return GameView(
        version=view.version,
        status=GameStatus.FINISHED if finished else GameStatus.IN_PROGRESS,
        over=finished,
        ruleset=ruleset_from_proto(view.ruleset),
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
                _ref_from_proto(t.ref),
                _tiles_from_proto(t.tiles),
                tuple(t.open_ends),
                t.marker,
                tuple(
                    BranchView(
                        b.end,
                        b.parent_end if b.HasField("parent_end") else None,
                        _tiles_from_proto(b.tiles),
                        b.open_end if b.HasField("open_end") else None,
                    )
                    for b in t.branches
                ),
            )
            for t in view.trains
        ),
        open_doubles=tuple(
            OpenDoubleView(_ref_from_proto(d.train), d.value, d.answers) for d in view.open_doubles
        ),
        turn=None
        if finished
        else TurnView(view.turn.owes_tile, view.turn.drew_this_turn, view.turn.first_turn),
        hand=_tiles_from_proto(view.hand) if view.HasField("viewer_seat") else None,
        viewer_seat=view.viewer_seat if view.HasField("viewer_seat") else None,
        seed_sha256=view.seed_sha256,
        seed=view.seed or None,
        winners=tuple(view.winners),
        line=LineView(_tiles_from_proto(view.line.tiles), tuple(view.line.open_ends))
        if view.HasField("line")
        else None,
        teams=tuple(TeamView(tuple(t.seats), t.score) for t in view.teams),
        target_score=view.target_score,
    )


# ---------------------------------------------------------------- events


def event_to_proto(event: engine.Event, version: int) -> pb.GameEvent:
    """The full (unfiltered) wire event; :func:`redact` filters it per seat.

    Fields are set in place (setting one, even to 0, selects the oneof's
    member): building each sub-message and copying it in cost more.
    The commonest events come first.
    """
    message = pb.GameEvent(version=version)
    if isinstance(event, engine.TilePlayed):
        played = message.tile_played
        played.seat = event.seat
        played.tile.a, played.tile.b = event.tile
        _set_ref(played.train, event.train)
    elif isinstance(event, engine.TurnStarted):
        message.turn_started.seat = event.seat
    elif isinstance(event, engine.TileDrawn):
        drawn = message.tile_drawn
        drawn.seat = event.seat
        drawn.reason = _DRAW_REASON[event.why]
        if event.tile is not None:
            drawn.tile.a, drawn.tile.b = event.tile
    elif isinstance(event, engine.Passed):
        message.passed.seat = event.seat
    elif isinstance(event, engine.MarkerPlaced):
        message.marker_placed.seat = event.seat
    elif isinstance(event, engine.MarkerRemoved):
        message.marker_removed.seat = event.seat
    elif isinstance(event, engine.DoubleSatisfied):
        satisfied = message.double_satisfied
        _set_ref(satisfied.train, event.train)
        satisfied.value = event.value
        satisfied.dead = event.dead
    elif isinstance(event, engine.RoundStarted):
        started = message.round_started
        started.round = event.round
        if event.engine is not None:
            started.engine.a, started.engine.b = event.engine
        started.starter = event.starter
    elif isinstance(event, engine.RoundEnded):
        ended = message.round_ended
        ended.round = event.round
        ended.reason = _END_REASON[event.reason]
        ended.scores.extend(event.scores)
        if event.winner is not None:
            ended.winner = event.winner
    elif isinstance(event, engine.PointsScored):
        scored = message.points_scored
        scored.seat = event.seat
        scored.points = event.points
        scored.reason = _POINTS_REASON[event.reason]
        if event.team is not None:
            scored.team = event.team
    elif isinstance(event, engine.GameEnded):
        over = message.game_ended
        over.totals.extend(event.totals)
        over.winners.extend(event.winners)
        over.seed = event.seed
    return message


def redact(message: pb.GameEvent, seat: int | None) -> pb.GameEvent:
    """``message`` as ``seat`` may see it: another seat's drawn tile is removed
    (MT-DR-3). Returns ``message`` itself when nothing is hidden."""
    if (
        message.WhichOneof("kind") == "tile_drawn"
        and message.tile_drawn.seat != seat
        and message.tile_drawn.HasField("tile")
    ):
        hidden = pb.GameEvent()
        hidden.CopyFrom(message)
        hidden.tile_drawn.ClearField("tile")
        return hidden
    return message
