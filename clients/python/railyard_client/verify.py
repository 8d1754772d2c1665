"""Re-deal a finished game from its revealed seed and check it (MT-FAIR-1).

The service commits to the seed when a game starts (``seedSha256`` in every
view) and reveals it once the game is over. From the seed alone, API.md's
shuffle gives every round's deal and boneyard order; :func:`verify_game`
replays the public log (GetGameLog) against them: every tile a seat played
must be one it was dealt or drew (draws come from the front of the
boneyard), the round's engine and first player must be the ones the seed
gives, and Mexican Train's round scores must be the pips left in hand.

>>> shuffled = shuffle("railyard", "round:1:deal", [t for t in tiles(12) if t != (12, 12)])
>>> " ".join(f"{a}-{b}" for a, b in shuffled[:5])
'3-12 3-9 3-4 8-8 2-4'
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, MutableSequence, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from railyard_api import game_service_pb2 as pb

T = TypeVar("T")
Tile = tuple[int, int]

_TWO64 = 1 << 64


def _words(seed: str, label: str) -> Iterator[int]:
    """API.md step 1: SHA-256(seed 0x00 label 0x00 counter), as big-endian u64s."""
    prefix = seed.encode() + b"\x00" + label.encode() + b"\x00"
    counter = 0
    while True:
        digest = hashlib.sha256(prefix + counter.to_bytes(8, "big")).digest()
        for i in range(0, 32, 8):
            yield int.from_bytes(digest[i : i + 8], "big")
        counter += 1


def _uniform(words: Iterator[int], n: int) -> int:
    """API.md step 2: a uniform integer below ``n``, by rejection."""
    limit = _TWO64 - _TWO64 % n
    while True:
        x = next(words)
        if x < limit:
            return x % n


def shuffle(seed: str, label: str, items: MutableSequence[T]) -> MutableSequence[T]:
    """API.md step 3: Fisher-Yates from the last index down, in place; returns ``items``."""
    words = _words(seed, label)
    for i in range(len(items) - 1, 0, -1):
        j = _uniform(words, i + 1)
        items[i], items[j] = items[j], items[i]
    return items


def tiles(set_max: int) -> list[Tile]:
    """Every tile of the double-``set_max`` set in canonical order (a <= b)."""
    return [(a, b) for a in range(set_max + 1) for b in range(a, set_max + 1)]


def seed_sha256(seed: str) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()


class DealMismatchError(Exception):
    """The log does not follow from the seed: the deals were not the seed's."""


@dataclass
class Report:
    """What :func:`verify_game` checked."""

    rounds: int = 0
    tiles_played: int = 0
    tiles_drawn: int = 0
    checks: list[str] = field(default_factory=list)


def _tile(message: pb.Tile) -> Tile:
    return (min(message.a, message.b), max(message.a, message.b))


def _rounds(events: Sequence[pb.GameEvent]) -> list[list[pb.GameEvent]]:
    """The log cut into rounds: a round ends with its roundEnded event, and the
    next one's deal events (engine search draws) may come before roundStarted."""
    rounds: list[list[pb.GameEvent]] = [[]]
    for event in events:
        if event.HasField("game_ended"):
            break
        rounds[-1].append(event)
        if event.HasField("round_ended"):
            rounds.append([])
    return [r for r in rounds if r]


_LINE_GAMES = {
    pb.GAME_BLOCK,
    pb.GAME_DRAW,
    pb.GAME_ALL_FIVES,
    pb.GAME_BERGEN,
    pb.GAME_MATADOR,
}


def verify_game(log: pb.GetGameLogResponse, *, view_seed_sha256: str | None = None) -> Report:
    """Check a finished game's log against its revealed seed.

    ``view_seed_sha256``: the commitment as a view showed it during the game
    (from a GetGame or a watch snapshot), which must match the log's too.
    Raises :class:`DealMismatchError` naming the first discrepancy.
    """
    report = Report()
    seed = log.seed
    if not seed:
        raise DealMismatchError("the log has no seed: the game is not over")
    digest = seed_sha256(seed)
    for name, commitment in (("log", log.seed_sha256), ("view", view_seed_sha256)):
        if commitment is not None and commitment != digest:
            raise DealMismatchError(
                f"SHA-256 of the seed is {digest}, the {name} committed to {commitment}"
            )
    report.checks.append("seedSha256")
    ended = [e.game_ended for e in log.events if e.HasField("game_ended")]
    if not ended:
        raise DealMismatchError("the log has no gameEnded event")
    if ended[0].seed and ended[0].seed != seed:
        raise DealMismatchError("gameEnded reveals another seed than the log's")
    players = len(ended[0].totals)
    rules = log.ruleset
    line_game = rules.game in _LINE_GAMES
    hand_size, set_max = rules.hand_size, rules.set_max
    set_aside = not line_game and rules.engine_placement != pb.ENGINE_PLACEMENT_HOLDER_PLAYS
    canon = tiles(set_max)
    if hand_size * players > len(canon):
        raise DealMismatchError(f"{players} hands of {hand_size} do not fit a double-{set_max} set")

    for number, events in enumerate(_rounds(log.events), start=1):
        started = [e.round_started for e in events if e.HasField("round_started")]
        if not started or started[0].round != number:
            raise DealMismatchError(f"round {number}: no roundStarted for it in the log")
        engine: Tile | None = None
        if not line_game:
            engine = _tile(started[0].engine)
            # MT-RND-1: the engine counts down from the first (the top double
            # when the ruleset has no first_engine, as in Chicken Foot).
            first = rules.first_engine if rules.HasField("first_engine") else set_max
            expected = first - (number - 1)
            if engine != (expected, expected):
                raise DealMismatchError(
                    f"round {number}: engine {engine}, the rules give {expected}"
                )
        order = [t for t in canon if not (set_aside and t == engine)]
        shuffle(seed, f"round:{number}:deal", order)
        hands = [set(order[s * hand_size : (s + 1) * hand_size]) for s in range(players)]
        boneyard = order[players * hand_size :]
        if (
            number == 1
            and set_aside
            and rules.first_player == pb.FIRST_PLAYER_DRAW
            and started[0].starter != _first_player(seed, set_max, players, engine)
        ):
            raise DealMismatchError(
                f"round 1: seat {started[0].starter} started, the seed says another"
            )
        for event in events:
            if event.HasField("tile_drawn"):
                drawn = event.tile_drawn
                if not boneyard:
                    raise DealMismatchError(
                        f"v{event.version}: seat {drawn.seat} drew from an empty boneyard"
                    )
                tile = boneyard.pop(0)
                if drawn.HasField("tile") and _tile(drawn.tile) != tile:
                    raise DealMismatchError(
                        f"v{event.version}: seat {drawn.seat} drew {drawn.tile}, not {tile}"
                    )
                hands[drawn.seat].add(tile)
                report.tiles_drawn += 1
            elif event.HasField("tile_played"):
                played = event.tile_played
                tile = _tile(played.tile)
                if tile not in hands[played.seat]:
                    raise DealMismatchError(
                        f"v{event.version}: seat {played.seat} played {tile[0]}-{tile[1]},"
                        " which the seed did not give it"
                    )
                hands[played.seat].remove(tile)
                report.tiles_played += 1
            elif event.HasField("round_ended") and not line_game:
                # MT-SC-1: a round scores the pips left in hand (0-0 worth its option).
                if engine is not None and not set_aside:
                    for hand in hands:
                        hand.discard(engine)  # the holder placed it (MT-ENG-1)
                left = [
                    sum(rules.double_blank_value if t == (0, 0) else t[0] + t[1] for t in hand)
                    for hand in hands
                ]
                if list(event.round_ended.scores) != left:
                    raise DealMismatchError(
                        f"round {number}: scores {list(event.round_ended.scores)},"
                        f" the hands the seed gives leave {left}"
                    )
        report.rounds += 1
    report.checks.append("deals")
    return report


def _first_player(seed: str, set_max: int, players: int, engine: Tile | None) -> int:
    """MT-ENG-1 ``draw``: the highest pip total among the contenders starts;
    ties draw again with the next label (contender j takes shuffled tile j)."""
    contenders = list(range(players))
    k = 1
    while True:
        drawn = shuffle(
            seed, f"round:1:first-player:{k}", [t for t in tiles(set_max) if t != engine]
        )
        totals = [sum(drawn[j]) for j in range(len(contenders))]
        best = max(totals)
        contenders = [c for c, t in zip(contenders, totals, strict=True) if t == best]
        if len(contenders) == 1:
            return contenders[0]
        k += 1
