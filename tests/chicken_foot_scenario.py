"""Exact Chicken Foot positions for rule tests (CL-CF-1).

As ``tests/scenario.py`` does for Mexican Train, ``position(...)`` deals a
real :class:`~engine.games.chicken_foot.ChickenFoot` game, then sets the
hands, the boneyard, the station's lines, the seat to move and the scores
to what a test names, through the serialized form the service stores
(``to_dict`` / ``from_dict``). Lines are written by index, as tiles in play
order from the station (``{0: "9-5 5-3"}``); a line whose last tile is a
double gets an open double (a chicken foot owed its three answers). Hands
and the boneyard are tiles in any order (the boneyard first drawn first).
Tiles a test does not name are out of the game.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from engine.events import Event
from engine.games.chicken_foot import ChickenFoot, ChickenFootRules
from engine.games.mexican_train.game import SavedDouble, SavedTurn
from engine.moves import Move
from engine.tiles import Tile


def rules(**options: object) -> ChickenFootRules:
    """The preset ``chicken_foot_game`` with ``options`` over it."""
    return ChickenFootRules().with_options(**options)


#: Four lines keep the positions short; a test that needs six says so.
FOUR: ChickenFootRules = rules(center_lines=4, first_player="seat0")


def ids(text: str) -> list[int]:
    """Tile ids of ``"9-5 3-4"`` (either order inside a tile)."""
    return [Tile.parse(t).id for t in text.split()]


def position(
    game_rules: ChickenFootRules = FOUR,
    players: int = 4,
    *,
    hands: Sequence[str],
    boneyard: str = "",
    lines: Mapping[int, str] | None = None,
    seat: int = 0,
    round: int = 1,
    round_scores: Sequence[Sequence[int]] | None = None,
    seed: str = "scenario",
) -> ChickenFoot:
    """A game at ``round`` (station ``set_max - round + 1``) with exactly these
    hands, boneyard, lines and seat to move; ``round_scores`` are the
    finished rounds' scores (default: none, or zeros before ``round``)."""
    if len(hands) != players:
        raise ValueError(f"{players} hands expected, got {len(hands)}")
    game = ChickenFoot(game_rules, players, seed)
    data = game.to_dict()
    station = game.set_max - (round - 1)
    data["round"] = round
    data["starter"] = seat
    data["hands"] = [sorted(ids(h)) for h in hands]
    data["boneyard"] = ids(boneyard)[::-1]  # the engine pops its draws from the end
    data["trains"] = [[[-1, station, []]] for _ in range(game.slot_count)]
    doubles: list[SavedDouble] = []
    for line, text in sorted((lines or {}).items()):
        open_end = station
        codes = []
        last_double = False
        for tile in (Tile.parse(t) for t in text.split()):
            if open_end not in tile:
                raise ValueError(f"{tile} does not follow open end {open_end} on line {line}")
            other = tile.b if tile.a == open_end else tile.a
            codes.append(open_end << 5 | other)
            last_double = tile.is_double
            open_end = other
        data["trains"][line] = [[-1, open_end, codes]]
        if last_double:
            doubles.append(
                {"slot": line, "end": 0, "value": open_end, "answers": 0, "played_this_turn": False}
            )
    data["doubles"] = doubles
    data["first_turn_pending"] = [False] * players
    turn: SavedTurn = {
        "seat": seat,
        "owes": False,
        "drew": False,
        "forced": -1,
        "doubles_this_turn": 0,
        "played_this_turn": 0,
        "penalties": 0,
        "last_double": -1,
        "own_train_only": False,
        "chain_open": False,
    }
    data["turn"] = turn
    if round_scores is None:
        round_scores = [[0] * (round - 1) for _ in range(players)]
    data["round_scores"] = [list(r) for r in round_scores]
    data["version"] = 0
    data["history"] = ""
    return ChickenFoot.from_dict(data)


def play(game: ChickenFoot, *moves: str) -> list[Event]:
    """Apply moves given in text form; return all their events."""
    events: list[Event] = []
    for text in moves:
        events.extend(game.apply(Move.parse(text)))
    return events


def legal(game: ChickenFoot) -> list[str]:
    """The legal moves now, in text form, in the engine's order."""
    return [str(m) for m in game.legal_moves()]


def typed(events: Sequence[object]) -> list[tuple[str, object]]:
    """Events with their type names: named tuples of equal fields compare equal
    across types, so an exact check compares these."""
    return [(type(e).__name__, e) for e in events]
