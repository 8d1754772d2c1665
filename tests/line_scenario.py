"""Exact positions of the line games for rule tests.

``position(...)`` deals a real game, then sets the hands, the boneyard, the
line, the seat to move and the scores to what a test names, through the
same serialized form the service stores (``LineGame.to_dict`` /
``from_dict``), so every rule test starts from a position it spells out.
The line is written left to right with each tile's halves as they lie
(``"3-5 5-5 5-2"``: left end 3, right end 2); hands and the boneyard as
tiles in any order (the boneyard first drawn first). Tiles a test does not
name are out of the game.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.games.line import PRESETS, LineGame, LineRules
from engine.moves import Move
from engine.tiles import Tile


def ids(text: str) -> list[int]:
    """Tile ids of ``"6-5 3-4"`` (either order inside a tile)."""
    return [Tile.parse(t).id for t in text.split()]


def oriented(text: str) -> list[int]:
    """The line's codes ``left << 5 | right`` of ``"3-5 5-2"``, halves as written."""
    codes = []
    for word in text.split():
        left, right = (int(x) for x in word.split("-"))
        codes.append(left << 5 | right)
    return codes


def rules(name: str = "block", **options: object) -> LineRules:
    base = PRESETS[name]
    return base.with_options(**options) if options else base


def position(
    ruleset: LineRules | str = "block",
    players: int = 2,
    *,
    hands: Sequence[str],
    boneyard: str = "",
    line: str = "",
    seat: int = 0,
    opening: str | None = None,
    drew: bool = False,
    first_turns_done: bool | None = None,
    round: int = 1,
    round_scores: Sequence[Sequence[int]] | None = None,
    hand_points: Sequence[int] | None = None,
    seed: str = "scenario",
) -> LineGame:
    """A game at hand ``round`` with exactly these hands, boneyard, line and
    seat to move. Before the opening (``line`` empty) ``opening`` names the
    tile that must open (CL-START-1), or any tile opens. ``round_scores``
    are the finished hands' scores (default: zeros for the hands before
    ``round``), ``hand_points`` what was scored so far in this hand."""
    game_rules = rules(ruleset) if isinstance(ruleset, str) else ruleset
    if len(hands) != players:
        raise ValueError(f"{players} hands expected, got {len(hands)}")
    data = LineGame(game_rules, players, seed).to_dict()
    data["round"] = round
    data["starter"] = seat
    data["hands"] = [sorted(ids(h)) for h in hands]
    data["boneyard"] = ids(boneyard)
    data["line"] = oriented(line)
    data["opening_tile"] = ids(opening)[0] if opening and not line else -1
    data["turn"] = [seat, drew]
    done = bool(line) if first_turns_done is None else first_turns_done
    data["turns"] = players if done else 0
    if round_scores is None:
        round_scores = [[0] * (round - 1) for _ in range(players)]
    data["round_scores"] = [list(r) for r in round_scores]
    data["hand_points"] = list(hand_points or [0] * players)
    data["hand_winners"] = [-1] * len(data["round_scores"][0])
    data["version"] = 0
    data["history"] = ""
    return LineGame.from_dict(data)


def play(game: LineGame, *moves: str) -> list[object]:
    """Apply moves given in text form; return all their events."""
    events: list[object] = []
    for text in moves:
        events.extend(game.apply(Move.parse(text)))
    return events


def notations(game: LineGame) -> list[str]:
    """The legal moves now, in text form, sorted (RULES.md fixes no order)."""
    return sorted(str(m) for m in game.legal_moves())


def line_text(game: LineGame) -> str:
    """The line as ``position`` writes it."""
    return " ".join(f"{t.a}-{t.b}" for t in game.line_tiles())
