"""Engine values <-> railyard.v1 messages. Pure functions, no I/O.

The one place that knows both vocabularies: rulesets (preset + optional
overrides), moves, views and events. Views and events are converted from the
engine's own seat-filtered values, so nothing hidden can slip in here.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Final

from google.protobuf.descriptor import EnumDescriptor, FieldDescriptor

import engine
from engine import Move, MoveKind, Tile, TrainKind, TrainRef
from engine.tiles import MAX_SET
from engine.view import GameView
from service.api import game_service_pb2 as pb
from service.errors import invalid
from service.jsonwire import to_dict

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


#: What ruleset_from_proto admits, for the OpenAPI schema (service.field_limits):
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
        if play.tile.a > MAX_SET or play.tile.b > MAX_SET:
            raise invalid(f"{play.tile.a}-{play.tile.b} is not a tile: halves go up to {MAX_SET}")
        tile = Tile.of(play.tile.a, play.tile.b)
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


# -- trains and hand in protobuf's wire format -------------------------------
#
# Filling repeated message fields through the Python API costs thousands of
# instructions per tile (``extend`` copies each Tile message): with the hand,
# 60% of a view's cost over gRPC. The trains and the hand are written here in
# wire format from prebuilt bytes, tile by tile in C (``map`` over a dict), and
# the message parses them with one MergeFromString. tests/test_convert_json.py
# checks the result equals the message filled field by field, on every
# position of real games. Every number written is below 128 (pips <= 18, seats
# < 14, branch ends < 4), so each is one byte; lengths may not be.


def _varint(value: int) -> bytes:
    if value < 0x80:  # most lengths here: one byte
        return _BYTES[value]
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_BYTES: Final = [bytes((i,)) for i in range(0x80)]


def _wire_tile(field: int, a: int, b: int) -> bytes:
    body = (bytes((0x08, a)) if a else b"") + (bytes((0x10, b)) if b else b"")
    return bytes((field << 3 | 2, len(body))) + body


def _wire_tiles(field: int) -> dict[Tile, bytes]:
    """Every oriented tile (``a > b`` in trains too) as field ``field``."""
    return {Tile(a, b): _wire_tile(field, a, b) for a in range(32) for b in range(32)}


_WIRE_TRAIN_TILES: Final = _wire_tiles(2)  # TrainView.tiles
_WIRE_BRANCH_TILES: Final = _wire_tiles(3)  # Branch.tiles
_WIRE_HAND: Final = _wire_tiles(14)  # GameView.hand


@functools.lru_cache(maxsize=1024)
def _wire_ref(ref: TrainRef) -> bytes:
    """``TrainView.ref`` (field 1); its ``target`` is a oneof: written even when 0."""
    if ref.kind is TrainKind.SEAT:
        body = bytes((0x08, ref.number))
    elif ref.kind is TrainKind.MEXICAN:
        body = bytes((0x10, ref.number))
    else:
        body = b"\x1a\x00"  # line: an empty message
    if ref.end:
        body += bytes((0x20, ref.end))
    return bytes((0x0A, len(body))) + body


def _wire_trains_and_hand(view: GameView) -> bytes:
    """``GameView.trains`` (field 11) and ``GameView.hand`` (field 14)."""
    out = []
    for t in view.trains:
        parts = [_wire_ref(t.ref), *map(_WIRE_TRAIN_TILES.__getitem__, t.tiles)]
        if t.open_ends:  # packed
            parts.append(bytes((0x1A, len(t.open_ends), *t.open_ends)))
        if t.marker:
            parts.append(b"\x20\x01")
        for br in t.branches:  # MT-DBL-7
            branch = [bytes((0x08, br.end))] if br.end else []
            if br.parent_end is not None:  # optional: written when set, even 0
                branch.append(bytes((0x10, br.parent_end)))
            branch += map(_WIRE_BRANCH_TILES.__getitem__, br.tiles)
            if br.open_end is not None:
                branch.append(bytes((0x20, br.open_end)))
            body = b"".join(branch)
            parts.append(b"\x2a" + _varint(len(body)) + body)
        body = b"".join(parts)
        out.append(b"\x5a" + _varint(len(body)) + body)
    if view.hand:
        out += map(_WIRE_HAND.__getitem__, view.hand)
    return b"".join(out)


def view_to_proto(
    view: GameView,
    game_id: str,
    names: Sequence[str],
    bots: Sequence[int],
    seed_from_caller: bool = False,
    into: pb.GameView | None = None,
) -> pb.GameView:
    """The wire form of an engine view (already filtered for its viewer),
    written into ``into`` when given (a response's field: no copy).

    Players and open doubles are filled with ``add()`` (building each nested
    message first and copying it in cost twice as much); the trains and the
    hand are parsed in from wire format (:func:`_wire_trains_and_hand`).
    """
    message = pb.GameView() if into is None else into
    message.game_id = game_id
    message.version = view.version
    message.status = _STATUS[view.status]
    message.round = view.round
    message.rounds_total = view.rounds_total
    message.boneyard_count = view.boneyard_count
    message.seed_sha256 = view.seed_sha256
    message.winners.extend(view.winners)
    message.seed_from_caller = seed_from_caller
    message.ruleset.CopyFrom(_ruleset_message(view.ruleset))
    if view.engine is not None:
        message.engine.a = view.engine.a
        message.engine.b = view.engine.b
    if view.current_seat is not None:
        message.current_seat = view.current_seat
    if view.viewer_seat is not None:
        message.viewer_seat = view.viewer_seat
    if view.seed is not None:
        message.seed = view.seed
    if view.turn is not None:
        turn = message.turn
        turn.owes_tile = view.turn.owes_tile
        turn.drew_this_turn = view.turn.drew_this_turn
        turn.first_turn = view.turn.first_turn
    add_player = message.players.add
    for p in view.players:
        add_player(
            seat=p.seat,
            display_name=names[p.seat],
            hand_count=p.hand_count,
            marker=p.marker,
            score=p.score,
            round_scores=p.round_scores,
            bot=bots[p.seat],
        )
    message.MergeFromString(_wire_trains_and_hand(view))
    for d in view.open_doubles:
        double = message.open_doubles.add(value=d.value, answers=d.answers)
        _set_ref(double.train, d.train)
    if view.line is not None:  # the classic games (API.md): small, field by field
        add_tile = message.line.tiles.add
        for tile in view.line.tiles:
            add_tile(a=tile.a, b=tile.b)
        message.line.open_ends.extend(view.line.open_ends)
        message.line.SetInParent()  # present before the opening too
    for team in view.teams:
        message.teams.add(seats=team.seats, score=team.score)
    message.target_score = view.target_score
    return message


# -- the same views as canonical proto3 JSON, for HTTP ----------------------
#
# An HTTP view went engine view -> protobuf message -> JSON dict: half of the
# application's CPU per move, mostly in the second step (one Python call per
# tile). These build the dict MessageToDict would give straight from the
# engine view (tests/test_convert_json.py checks they are equal on every
# position of real games). proto3 JSON leaves out zero scalars, empty lists
# and unset optionals, writes int64 as strings and enums by name.


def _json_tile(a: int, b: int) -> dict[str, int]:
    out = {}
    if a:
        out["a"] = a
    if b:
        out["b"] = b
    return out


#: Shared, never mutated: orjson writes the same dict as often as it appears.
_JSON_TILES: Final = [[_json_tile(a, b) for b in range(32)] for a in range(32)]


_JSON_BY_TILE: Final = {Tile(a, b): _JSON_TILES[a][b] for a in range(32) for b in range(32)}


def _json_tiles(tiles: Sequence[Tile]) -> list[dict[str, int]]:
    return list(map(_JSON_BY_TILE.__getitem__, tiles))  # a C loop


@functools.lru_cache(maxsize=1024)
def _json_ref(ref: TrainRef) -> dict[str, Any]:
    out: dict[str, Any]
    if ref.kind is TrainKind.SEAT:
        out = {"seat": ref.number}
    elif ref.kind is TrainKind.MEXICAN:
        out = {"mexican": ref.number}
    else:
        out = {"line": {}}
    if ref.end:
        out["end"] = ref.end
    return out


@functools.lru_cache(maxsize=256)
def _json_ruleset(ruleset: engine.Rules) -> dict[str, Any]:
    return to_dict(_ruleset_message(ruleset))


_JSON_STATUS: Final = {k: pb.GameStatus.Name(v) for k, v in _STATUS.items()}
_JSON_BOT: Final[dict[int, str | int]] = {v: pb.BotLevel.Name(v) for v in pb.BotLevel.values()}


def view_to_json(
    view: GameView,
    game_id: str,
    names: Sequence[str],
    bots: Sequence[int],
    seed_from_caller: bool = False,
) -> dict[str, Any]:
    """``MessageToDict(view_to_proto(view, game_id, names, bots, seed_from_caller))``.

    Built directly for Mexican Train, whose views are large (every train's
    tiles): 5 us against 50 us through the message and the one JSON encoder
    (service.jsonwire), on a mid-game 4-player view. Every other game's view
    (a line of at most 28 tiles) takes that one path, so no second encoder
    is written for the classic games' messages.
    """
    if view.line is not None or view.teams or view.target_score:
        return to_dict(view_to_proto(view, game_id, names, bots, seed_from_caller))
    out: dict[str, Any] = {}
    if game_id:
        out["gameId"] = game_id
    if view.version:
        out["version"] = str(view.version)  # int64
    out["status"] = _JSON_STATUS[view.status]
    out["ruleset"] = _json_ruleset(view.ruleset)
    if view.round:
        out["round"] = view.round
    if view.rounds_total:
        out["roundsTotal"] = view.rounds_total
    if view.engine is not None:
        out["engine"] = _JSON_TILES[view.engine.a][view.engine.b]
    if view.current_seat is not None:
        out["currentSeat"] = view.current_seat
    if view.boneyard_count:
        out["boneyardCount"] = view.boneyard_count
    players = []
    for p in view.players:
        player: dict[str, Any] = {}
        if p.seat:
            player["seat"] = p.seat
        if names[p.seat]:
            player["displayName"] = names[p.seat]
        if p.hand_count:
            player["handCount"] = p.hand_count
        if p.marker:
            player["marker"] = True
        if p.score:
            player["score"] = p.score
        if p.round_scores:
            player["roundScores"] = list(p.round_scores)
        if bots[p.seat]:
            player["bot"] = _JSON_BOT.get(bots[p.seat], bots[p.seat])
        players.append(player)
    if players:
        out["players"] = players
    trains = []
    for t in view.trains:
        train: dict[str, Any] = {"ref": _json_ref(t.ref)}
        if t.tiles:
            train["tiles"] = _json_tiles(t.tiles)
        if t.open_ends:
            train["openEnds"] = list(t.open_ends)
        if t.marker:
            train["marker"] = True
        if t.branches:
            branches = []
            for b in t.branches:
                branch: dict[str, Any] = {}
                if b.end:
                    branch["end"] = b.end
                if b.parent_end is not None:
                    branch["parentEnd"] = b.parent_end
                if b.tiles:
                    branch["tiles"] = _json_tiles(b.tiles)
                if b.open_end is not None:
                    branch["openEnd"] = b.open_end
                branches.append(branch)
            train["branches"] = branches
        trains.append(train)
    if trains:
        out["trains"] = trains
    if view.open_doubles:
        doubles = []
        for d in view.open_doubles:
            double: dict[str, Any] = {"train": _json_ref(d.train)}
            if d.value:
                double["value"] = d.value
            if d.answers:
                double["answers"] = d.answers
            doubles.append(double)
        out["openDoubles"] = doubles
    if view.turn is not None:
        turn = {}
        if view.turn.owes_tile:
            turn["owesTile"] = True
        if view.turn.drew_this_turn:
            turn["drewThisTurn"] = True
        if view.turn.first_turn:
            turn["firstTurn"] = True
        out["turn"] = turn
    if view.hand:
        out["hand"] = _json_tiles(view.hand)
    if view.viewer_seat is not None:
        out["viewerSeat"] = view.viewer_seat
    if view.seed_sha256:
        out["seedSha256"] = view.seed_sha256
    if view.seed:
        out["seed"] = view.seed
    if view.winners:
        out["winners"] = list(view.winners)
    if seed_from_caller:
        out["seedFromCaller"] = True
    return out


def _set_ref(message: pb.TrainRef, ref: TrainRef) -> None:
    if ref.kind is TrainKind.SEAT:
        message.seat = ref.number
    elif ref.kind is TrainKind.MEXICAN:
        message.mexican = ref.number
    else:
        message.line.SetInParent()
    if ref.end:
        message.end = ref.end


# ---------------------------------------------------------------- events


def event_to_proto(event: engine.Event, version: int) -> pb.GameEvent:
    """The full (unfiltered) wire event; :func:`redact` filters it per seat.

    Fields are set in place (setting one, even to 0, selects the oneof's
    member): building each sub-message and copying it in cost twice as much.
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


#: The events whose message holds a seat only, by member: its JSON name.
_JSON_SEAT_EVENTS: Final = {
    "turn_started": "turnStarted",
    "passed": "passed",
    "marker_placed": "markerPlaced",
    "marker_removed": "markerRemoved",
}
_JSON_DRAW_REASON: Final = {v: pb.DrawReason.Name(v) for v in pb.DrawReason.values()}


def _json_ref_message(ref: pb.TrainRef) -> dict[str, Any]:
    target = ref.WhichOneof("target")  # a oneof: written when set, even to 0
    out: dict[str, Any] = {}
    if target == "line":
        out["line"] = {}
    elif target is not None:
        out[target] = getattr(ref, target)  # seat, mexican: JSON name = field name
    if ref.end:
        out["end"] = ref.end
    return out


def event_to_json(message: pb.GameEvent) -> dict[str, Any]:
    """``MessageToDict(message)``, built directly for the events of nearly
    every move (a turn begun, a tile played or drawn, a pass, a marker):
    2-3.5 us each through the one JSON encoder (service.jsonwire), about
    two a move, against under 1 us here. Every other event takes that one
    path (tests/test_convert_json.py checks both on every event of real
    games, as each seat and a spectator see it)."""
    kind = message.WhichOneof("kind")
    body: dict[str, Any] = {}
    name = _JSON_SEAT_EVENTS.get(kind or "")
    if name is not None:
        seat = getattr(message, str(kind)).seat
        if seat:
            body["seat"] = seat
    elif kind == "tile_played":
        name = "tilePlayed"
        played = message.tile_played
        if played.seat:
            body["seat"] = played.seat
        if played.HasField("tile"):
            body["tile"] = _json_tile(played.tile.a, played.tile.b)
        if played.HasField("train"):
            body["train"] = _json_ref_message(played.train)
    elif kind == "tile_drawn":
        name = "tileDrawn"
        drawn = message.tile_drawn
        if drawn.seat:
            body["seat"] = drawn.seat
        if drawn.HasField("tile"):  # (not in another seat's view: MT-DR-3)
            body["tile"] = _json_tile(drawn.tile.a, drawn.tile.b)
        if drawn.reason:
            body["reason"] = _JSON_DRAW_REASON.get(drawn.reason, drawn.reason)
    else:
        return to_dict(message)
    out: dict[str, Any] = {}
    if message.version:
        out["version"] = str(message.version)  # int64
    out[name] = body
    return out


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
