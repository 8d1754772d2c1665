"""Exact positions for rule tests: a directly built deal.

``position(...)`` deals a real game, then sets the hands, the boneyard, the
trains and the turn to what a test names, through the same serialized form
the service stores, so every rule test starts from a position it spells out.
Trains are written as tiles in play order (``"12-5 5-3"``); a train whose
last tile is a double gets an open (blocking) double, in the order given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from engine import MexicanTrain, Move, Ruleset, preset
from engine.games.mexican_train.game import SavedDouble, SavedTurn
from engine.tiles import Tile


def ids(text: str) -> list[int]:
    """Tile ids of ``"12-5 3-4"`` (either order inside a tile)."""
    return [Tile.parse(t).id for t in text.split()]


def position(
    ruleset: Ruleset | str = "standard",
    players: int = 4,
    *,
    hands: Sequence[str],
    boneyard: str = "",
    trains: Mapping[str, str] | None = None,
    markers: Iterable[int] = (),
    seat: int = 0,
    first_turns_done: bool = True,
    round: int = 1,
    round_scores: Sequence[Sequence[int]] | None = None,
    seed: str = "scenario",
) -> MexicanTrain:
    """A game at ``round`` with exactly these hands, boneyard (first drawn first),
    trains (``"p0"``, ``"m0"`` ...), markers and seat to move."""
    rules = preset(ruleset) if isinstance(ruleset, str) else ruleset
    game = MexicanTrain(rules, players, seed)
    if len(hands) != players:
        raise ValueError(f"{players} hands expected, got {len(hands)}")
    data = game.to_dict()
    first_engine = rules.resolve(players).first_engine
    assert first_engine is not None
    engine = first_engine - (round - 1)
    data["round"] = round
    data["hands"] = [ids(h) for h in hands]
    data["boneyard"] = ids(boneyard)[::-1]
    slots = game.slot_count
    data["trains"] = [[[-1, engine, []]] for _ in range(slots)]
    doubles: list[SavedDouble] = []
    for name, text in (trains or {}).items():
        slot = _slot(name, players)
        open_end = engine
        codes = []
        last_double = False
        for tile in (Tile.parse(t) for t in text.split()):
            if open_end not in tile:
                raise ValueError(f"{tile} does not follow open end {open_end} on {name}")
            other = tile.b if tile.a == open_end else tile.a
            codes.append(open_end << 5 | other)
            last_double = tile.is_double
            open_end = other
        data["trains"][slot] = [[-1, open_end, codes]]
        if last_double:
            doubles.append(
                {"slot": slot, "end": 0, "value": open_end, "answers": 0, "played_this_turn": False}
            )
    data["doubles"] = doubles
    marked = set(markers)
    data["markers"] = [s in marked for s in range(players)]
    data["first_turn_pending"] = [not first_turns_done] * players
    chain = (
        rules.first_turn.value == "chain"
        and not first_turns_done
        and not (doubles and rules.open_doubles_block)
    )
    turn: SavedTurn = {
        "seat": seat,
        "owes": False,
        "drew": False,
        "forced": -1,
        "doubles_this_turn": 0,
        "played_this_turn": 0,
        "penalties": 0,
        "last_double": -1,
        "own_train_only": chain,
        "chain_open": chain,
    }
    data["turn"] = turn
    if round_scores is not None:
        data["round_scores"] = [list(r) for r in round_scores]
    data["version"] = 0
    data["history"] = ""
    return MexicanTrain.from_dict(data)


def _slot(name: str, players: int) -> int:
    kind, index = name[0], int(name[1:])
    return index if kind == "p" else players + index


def play(game: MexicanTrain, *moves: str) -> list[object]:
    """Apply moves given in text form; return all their events."""
    events: list[object] = []
    for text in moves:
        events.extend(game.apply(Move.parse(text)))
    return events


def notations(game: MexicanTrain) -> list[str]:
    """The legal moves now, in text form."""
    return [str(m) for m in game.legal_moves()]
