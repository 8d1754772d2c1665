"""``railyard ladder``: a pool of bots rated against each other on duplicate deals.

**The pool**: built-in levels (``random``, ``greedy``, ``expert``),
``module:function`` bots (railyard-bot's ``--module`` contract,
:mod:`service.ladder.module_bots`) and remote bots (``--remote NAME=COMMAND``: any
program, in any language, that plays a seat through the API;
:mod:`service.ladder.remote`). Every bot has its own name; a table seats
each bot once.

**Tables.** A table has one place per side: a seat, or a team (CL-TEAM-1:
a bot plays both seats of its team). With ``k`` places and a pool of ``m``
bots, the tables are every ``k``-bot subset of the pool, in the pool's
order (``itertools.combinations``): every pair of bots meets at exactly
``C(m-2, k-2)`` tables, so all pairs meet equally often, and every bot
plays the same number of tables, ``C(m-1, k-1)``. A balanced incomplete
block design would need fewer tables for some ``(m, k)``, but none exists
for most; the subsets always do, at the cost of ``C(m, k)`` tables a deal
(``m = k``: one table).

**Duplicate deals.** Each deal (seed ``f"{seed}:{d}"``) is played at every
table in each of the ``k`` rotations of its bots (:func:`engine.arena.seatings`),
so every bot holds every place's tiles of every deal it plays:
``deals * C(m, k) * k`` games. Rotations, not all ``k!`` orders: each bot
sits in each place once, but who plays after whom keeps the pool's cyclic
order.

**Rating.** openskill's Plackett-Luce model (Weng and Lin's multiplayer
Bayesian rating; Elo is two-player), one update per round (hand) with the
table's places ranked by the round's result: Mexican Train and Chicken Foot
by the round score, lowest first (its lowest is the round's winner,
MT-END-1/3); the classic games by the hand's winner first, then the points
made, highest first (per team: the partners' sum). Equal results share a
rank. Bots do not learn between games, so the model's drift ``tau`` is 0:
with it the rating would follow the latest rounds, not all of them. Updates
run in a fixed order (deal, table, rotation, round), whatever order the
games finished in, so the same arguments give the same table. Each bot's
rating is ``mu`` with ``mu ± 2 sigma`` (the model's own uncertainty, not an
interval over deals) and openskill's ordinal ``mu - 3 sigma``, by which the
table is sorted.

**Head to head**: for every pair, the share of the rounds they played at
one table in which the first finished ahead of the second (by the rank
above; ties count half).

Remote bots' games go through a running service (``--url``): see
:mod:`service.ladder.remote`. Games of levels and module bots alone are
played here, on the engine, like ``railyard arena`` (and spread over
processes with ``--jobs``); a level plays the same moves either way (its
choices are keyed by the seat's public view, ``engine.bot_key``).
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import shlex
import string
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from engine.arena import GameRecord, check_bots, is_level, play_deal, seatings, sides
from engine.bots import LEVELS
from engine.game import Rules
from engine.registry import game_spec
from service.ladder.module_bots import is_module_bot, module_bot

#: openskill's defaults, named here because the report states them.
MU: Final = 25.0
SIGMA: Final = 25.0 / 3.0
#: No drift: a bot's strength does not change between games (the module says why).
TAU: Final = 0.0
#: A remote bot's name: a short word, so tables and JSON keys stay readable.
REMOTE_NAME: Final = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,31}")
#: What a remote command may name (``{url}`` ... ``{seat}``).
PLACEHOLDERS: Final = ("url", "game", "token", "seat")
#: API.md: a caller's seed is at most 128 characters.
MAX_SEED: Final = 128

Progress = Callable[[int, int], None]
#: ``map``, or a process pool's (``service.cli`` passes one for ``--jobs``).
JobMapper = Callable[
    [Callable[["Seated"], "LadderGame"], Iterable["Seated"]], Iterable["LadderGame"]
]


@dataclass(frozen=True)
class RemoteBot:
    """``--remote NAME=COMMAND``: a program run once per seat it holds, its
    argv the command split like a shell would (``shlex``; no shell runs it)
    with ``{url}``, ``{game}``, ``{token}`` and ``{seat}`` filled in."""

    name: str
    argv: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> RemoteBot:
        """``NAME=COMMAND``; ValueError saying what is wrong.

        >>> bot = RemoteBot.parse("mine=my-bot --url {url} --game {game} --token={token}")
        >>> bot.argv
        ('my-bot', '--url', '{url}', '--game', '{game}', '--token={token}')
        >>> bot.command("http://127.0.0.1:8080", "0f3a", "T0K", 1)[-1]
        '--token=T0K'
        """
        name, sep, command = text.partition("=")
        name = name.strip()
        if not sep or not command.strip():
            raise ValueError(f"--remote {text!r}: write NAME=COMMAND")
        if not REMOTE_NAME.fullmatch(name) or name in LEVELS:
            raise ValueError(
                f"--remote {name!r}: a name is a letter then up to 31 letters, digits, "
                f"'_', '.' or '-', and not a level ({', '.join(LEVELS)})"
            )
        try:
            argv = tuple(shlex.split(command))
        except ValueError as exc:
            raise ValueError(f"--remote {name}: cannot split its command: {exc}") from None
        for part in argv:
            for _, placeholder, _, _ in string.Formatter().parse(part):
                if placeholder is not None and placeholder not in PLACEHOLDERS:
                    raise ValueError(
                        f"--remote {name}: unknown placeholder {{{placeholder}}}; known: "
                        + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS)
                        + " (write {{ and }} for braces)"
                    )
        if "{token}" not in command:
            raise ValueError(f"--remote {name}: the command must take the seat's {{token}}")
        return cls(name, argv)

    def command(self, url: str, game: str, token: str, seat: int) -> list[str]:
        values = {"url": url, "game": game, "token": token, "seat": seat}
        return [part.format(**values) for part in self.argv]


@dataclass(frozen=True)
class LadderConfig:
    """What ``railyard ladder`` plays: the local bots (levels, module bots)
    and the remote ones, the ruleset and player count, the deals, their
    seed, the expert's budget, and for remote bots the service and its
    clocks (``turn_timeout`` seconds a move, 0: none; ``game_timeout``
    seconds a game)."""

    bots: tuple[str, ...]
    ruleset: Rules
    players: int
    deals: int
    seed: str = "ladder"
    budget: int | None = None
    remotes: tuple[RemoteBot, ...] = ()
    url: str = ""
    turn_timeout: int = 30
    game_timeout: float = 600.0

    def __post_init__(self) -> None:
        pool = self.pool
        repeated = sorted({b for b in pool if pool.count(b) > 1})
        if repeated:
            raise ValueError(f"bot {repeated[0]!r} is in the pool twice: a table seats a bot once")
        check_bots(self.bots, module_bot)
        self.ruleset.resolve(self.players)  # refuses a count or deal that cannot be played
        places = len(self.sides)
        if len(pool) < max(2, places):
            raise ValueError(
                f"the pool has {len(pool)} bot(s) ({', '.join(pool) or 'none'}); a table "
                f"of {self.players} players has {places} places, one bot each: "
                "add bots or seat fewer players"
            )
        if self.deals < 1:
            raise ValueError(f"deals must be at least 1, not {self.deals}")
        if self.remotes and not self.url:
            raise ValueError("remote bots play through a service: give its --url")
        if self.url and not self.remotes:
            raise ValueError("--url is for remote bots (--remote): none was given")
        if self.remotes:
            longest = f"{self.seed}:{self.deals - 1}"
            if len(longest) > MAX_SEED:
                raise ValueError(f"--seed is too long for the API: deal seeds are {longest!r}")
            if self.budget is not None and "expert" in self.bots:
                raise ValueError(
                    "--budget cannot reach the service's expert, which plays the games with "
                    "remote bots at the service's own budget: leave --budget out"
                )
            if not 0 <= self.turn_timeout <= 86400:
                raise ValueError(f"--turn-timeout is 0 (none) to 86400 s, not {self.turn_timeout}")
            if self.game_timeout <= 0:
                raise ValueError(f"--game-timeout must be more than 0, not {self.game_timeout}")

    @property
    def pool(self) -> tuple[str, ...]:
        return (*self.bots, *(r.name for r in self.remotes))

    @functools.cached_property
    def sides(self) -> tuple[tuple[int, ...], ...]:
        """The seats of each place: a team's two (CL-TEAM-1), else one."""
        return sides(self.ruleset, self.players)

    @property
    def tables(self) -> list[tuple[str, ...]]:
        return list(itertools.combinations(self.pool, len(self.sides)))

    def kind(self, bot: str) -> str:
        if is_level(bot):
            return "level"
        return "module" if is_module_bot(bot) else "remote"

    def remote(self, bot: str) -> RemoteBot | None:
        return next((r for r in self.remotes if r.name == bot), None)


@dataclass(frozen=True)
class Seated:
    """One game of the schedule: which deal, table and rotation, the bot of
    each place (side) and of each seat, and the deal's seed."""

    index: int
    deal: int
    table: int
    rotation: int
    places: tuple[str, ...]
    seats: tuple[str, ...]
    seed: str


@dataclass(frozen=True)
class LadderGame:
    """A finished game of the schedule: its record and, per seat, the turns
    the service played for a remote bot whose time ran out."""

    seated: Seated
    record: GameRecord
    timeouts: tuple[int, ...] = ()


def schedule(config: LadderConfig) -> list[Seated]:
    """Every game, in rating order: deal, then table, then rotation."""
    places = config.sides
    out: list[Seated] = []
    for deal in range(config.deals):
        for t, table in enumerate(config.tables):
            for r, bots in enumerate(seatings(table)):
                seats = [""] * config.players
                for side, seats_of_side in zip(bots, places, strict=True):
                    for seat in seats_of_side:
                        seats[seat] = side
                out.append(
                    Seated(len(out), deal, t, r, bots, tuple(seats), f"{config.seed}:{deal}")
                )
    return out


def is_remote_game(config: LadderConfig, game: Seated) -> bool:
    return any(config.remote(b) is not None for b in game.places)


def play_here(config: LadderConfig, game: Seated) -> LadderGame:
    """A game of levels and module bots, on the engine (picklable: a process
    pool's job)."""
    record = play_deal(
        config.ruleset,
        game.seats,
        game.seed,
        clock=_no_clock,
        index=game.index,
        deal=game.deal,
        budget=config.budget,
        maker=module_bot,
    )
    return LadderGame(game, record)


def _no_clock() -> float:
    # The ladder rates results; decision times are the arena's.
    return 0.0


def run(
    config: LadderConfig,
    *,
    mapper: JobMapper = map,
    remote_jobs: int = 1,
    progress: Progress | None = None,
) -> list[LadderGame]:
    """Play the whole schedule: the engine's games through ``mapper`` (e.g. a
    process pool's), then the remote bots' through the service,
    ``remote_jobs`` at once; in schedule order."""
    games = schedule(config)
    here = [g for g in games if not is_remote_game(config, g)]
    there = [g for g in games if is_remote_game(config, g)]
    done: list[LadderGame] = []

    def step(game: LadderGame) -> None:
        done.append(game)
        if progress is not None:
            progress(len(done), len(games))

    for finished in mapper(functools.partial(play_here, config), here):
        step(finished)
    if there:
        from service.ladder.remote import play_all

        play_all(config, there, jobs=remote_jobs, done=step)
    done.sort(key=lambda g: g.seated.index)
    return done


# ------------------------------------------------------------------ rating


@dataclass
class Standing:
    """A bot's line of the ladder."""

    bot: str
    kind: str
    mu: float = MU
    sigma: float = SIGMA
    rounds: int = 0
    won: float = 0.0
    score: float = 0.0
    timeouts: int = 0

    @property
    def ordinal(self) -> float:
        return self.mu - 3 * self.sigma

    @property
    def low(self) -> float:
        return self.mu - 2 * self.sigma

    @property
    def high(self) -> float:
        return self.mu + 2 * self.sigma


@dataclass
class Ladder:
    """The rated pool: standings best first, head to head by pair."""

    config: LadderConfig
    games: int
    rounds: int
    standings: list[Standing]
    #: (a, b) -> [rounds a finished ahead of b (ties half), rounds they met]
    head_to_head: dict[tuple[str, str], list[float]] = field(default_factory=dict)


def ranks(keys: Sequence[tuple[float, float]]) -> list[int]:
    """Competition ranks (1 is best; equal keys share one), lower keys first.

    >>> ranks([(-1.0, 0.0), (0.0, 12.0), (0.0, 12.0), (0.0, 3.0)])
    [1, 3, 3, 2]
    """
    return [1 + sum(other < key for other in keys) for key in keys]


def rate(config: LadderConfig, games: Sequence[LadderGame]) -> Ladder:
    """Rate the pool from every round of ``games``, in schedule order."""
    from openskill.models import PlackettLuce

    model = PlackettLuce(mu=MU, sigma=SIGMA, tau=TAU)
    pool = config.pool
    ratings = {bot: model.rating(mu=MU, sigma=SIGMA, name=bot) for bot in pool}
    standing = {bot: Standing(bot, config.kind(bot)) for bot in pool}
    meetings = {(a, b): [0.0, 0.0] for a in pool for b in pool if a != b}
    low_wins = game_spec(config.ruleset.game).low_score_wins
    rounds = 0
    for game in sorted(games, key=lambda g: g.seated.index):
        places = game.seated.places
        units = game.record.sides or tuple((s,) for s in range(len(game.record.levels)))
        for seat, count in enumerate(game.timeouts):
            standing[game.record.levels[seat]].timeouts += count
        for scores, shares in zip(game.record.round_scores, game.record.round_shares, strict=True):
            rounds += 1
            won = [math.fsum(shares[s] for s in unit) for unit in units]
            points = [sum(scores[s] for s in unit) for unit in units]
            # The round's winner first (its share), then by score.
            keys = [(-w, p if low_wins else -p) for w, p in zip(won, points, strict=True)]
            order = ranks(keys)
            teams = model.rate([[ratings[b]] for b in places], ranks=[float(r) for r in order])
            for bot, team in zip(places, teams, strict=True):
                ratings[bot] = team[0]
            for i, bot in enumerate(places):
                line = standing[bot]
                line.rounds += 1
                line.won += won[i]
                line.score += points[i]
                for j, other in enumerate(places):
                    if i != j:
                        pair = meetings[(bot, other)]
                        ahead = order[i] < order[j]
                        pair[0] += 1.0 if ahead else 0.5 if order[i] == order[j] else 0.0
                        pair[1] += 1
    for bot, rating in ratings.items():
        standing[bot].mu, standing[bot].sigma = rating.mu, rating.sigma
    # Best ordinal first; the pool's order breaks exact ties, so the table is stable.
    ordered = sorted(standing.values(), key=lambda s: (-s.ordinal, pool.index(s.bot)))
    return Ladder(config, len(games), rounds, ordered, meetings)


# ------------------------------------------------------------------ output


def _describe(config: LadderConfig) -> str:
    rules = config.ruleset.resolve(config.players)
    return game_spec(rules.game).describe(rules)


def _measure(config: LadderConfig) -> tuple[str, str]:
    """What a round's rank is by, and what the score column holds."""
    teams = len(config.sides[0]) > 1
    if game_spec(config.ruleset.game).low_score_wins:
        return "round score, lowest first (the round's winner)", "pips a round (lower is better)"
    who = "team" if teams else "player"
    return (
        f"the hand's winning {who} first, then points made",
        f"points a hand{' (team)' if teams else ''} (higher is better)",
    )


def to_json(ladder: Ladder) -> dict[str, Any]:
    """The ladder as ``railyard ladder --json`` prints it."""
    config = ladder.config
    rules = config.ruleset.resolve(config.players)
    pool = config.pool
    ranked_by, score = _measure(config)
    return {
        "game": rules.game,
        "ruleset": rules.to_dict(),
        "players": config.players,
        "places": [list(side) for side in config.sides],
        "pool": [{"bot": b, "kind": config.kind(b)} for b in pool],
        "tables": [list(t) for t in config.tables],
        "deals": config.deals,
        "seed": config.seed,
        "seatings": len(config.sides),
        "games": ladder.games,
        "rounds": ladder.rounds,
        "score_unit": score,
        "rating": {
            "model": "openskill PlackettLuce",
            "mu": MU,
            "sigma": SIGMA,
            "tau": TAU,
            "ranked_by": ranked_by,
            "interval": "mu ± 2 sigma",
            "ordinal": "mu - 3 sigma",
        },
        "standings": [
            {
                "rank": rank,
                "bot": s.bot,
                "kind": s.kind,
                "mu": s.mu,
                "sigma": s.sigma,
                "low": s.low,
                "high": s.high,
                "ordinal": s.ordinal,
                "rounds": s.rounds,
                "won": s.won,
                "won_share": s.won / s.rounds if s.rounds else None,
                "mean_score": s.score / s.rounds if s.rounds else None,
                "timeouts": s.timeouts,
            }
            for rank, s in enumerate(ladder.standings, 1)
        ],
        "head_to_head": [
            {
                "bot": a,
                "against": b,
                "won": won,
                "rounds": int(met),
                "share": won / met if met else None,
            }
            for a in pool
            for b in pool
            if a != b
            for won, met in [ladder.head_to_head[(a, b)]]
        ],
    }


def report(ladder: Ladder) -> str:
    """The ladder as ``railyard ladder`` prints it."""
    config = ladder.config
    ranked_by, score = _measure(config)
    places = len(config.sides)
    teams = len(config.sides[0]) > 1
    table_word = f"{places} teams of 2" if teams else f"{places} players"
    lines = [
        f"ladder: {', '.join(config.pool)}; {table_word} a table, {_describe(config)}",
        f"{config.deals} deal(s) x {len(config.tables)} table(s) x {places} seatings = "
        f"{ladder.games} games, {ladder.rounds} rounds; seed {config.seed!r}",
        f"rating: openskill Plackett-Luce (mu {MU:g}, sigma {SIGMA:.2f} at the start, "
        f"tau {TAU:g}), one update a round;",
        f"  a round ranks by {ranked_by}; interval mu ± 2 sigma; ordinal mu - 3 sigma "
        "(the order below)",
        "",
    ]
    width = max(6, *(len(s.bot) for s in ladder.standings))
    timed = any(s.timeouts for s in ladder.standings) or config.remotes
    lines.append(
        f"{'#':>2} {'bot':<{width}} {'mu':>6} {'mu ± 2 sigma':<16} {'ordinal':>7} "
        f"{'rounds':>7} {'won share':>9} {'score':>8}" + ("  timeouts" if timed else "")
    )
    for rank, s in enumerate(ladder.standings, 1):
        share = s.won / s.rounds if s.rounds else math.nan
        mean = s.score / s.rounds if s.rounds else math.nan
        lines.append(
            f"{rank:>2} {s.bot:<{width}} {s.mu:>6.2f} {f'[{s.low:.2f}, {s.high:.2f}]':<16} "
            f"{s.ordinal:>7.2f} {s.rounds:>7,} {share:>9.3f} {mean:>8.2f}"
            + (f"  {s.timeouts:>8}" if timed else "")
        )
    lines += [
        f"(won share: of the rounds at the bot's tables, ties split; an even field is "
        f"{1 / places:.3f}. score: {score})",
        "",
        "head to head: the share of the rounds two bots played at one table in which the "
        "row's finished ahead of the column's (ties half)",
    ]
    # Columns by rank number: a module bot's name is too long for a column.
    names = [s.bot for s in ladder.standings]
    lines.append(" " * (width + 4) + "".join(f"{rank:>7}" for rank in range(1, len(names) + 1)))
    for rank, a in enumerate(names, 1):
        row = []
        for b in names:
            won, met = ladder.head_to_head.get((a, b), (0.0, 0.0))
            row.append(f"{'-':>7}" if a == b else f"{won / met:>7.3f}" if met else " " * 7)
        lines.append(f"{rank:>2} {a:<{width}} " + "".join(row))
    counts = sorted({int(m) for (_, m) in ladder.head_to_head.values()})
    if counts:
        count = str(counts[0]) if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"
        lines.append(f"(rounds met by each pair: {count})")
    slow = [s for s in ladder.standings if s.timeouts]
    for s in slow:
        lines.append(
            f"warning: {s.bot} ran out of time on {s.timeouts} turn(s); the service played "
            "them as the greedy bot, so its rating is partly greedy's"
        )
    return "\n".join(lines)
