"""Full positions consistent with one seat's view, for search under hidden information.

A bot is handed a :class:`~engine.view.GameView`: its own hand and everything
public (MT-VIS-1), nothing of another hand or of the boneyard (MT-VIS-3). To
look ahead it must guess the rest. :class:`Determinizer` lists the tiles the
seat has not seen (the set, less its hand, the tiles on the trains and the
engine) and deals them at random to the other hands, each with its public
count, and to the boneyard, in a random order: a *determinization*; the
search averages over many of them. The deal is uniform: it does not use
what markers hint at (a seat whose marker went on could not play then),
since the view has no move log to say what the trains offered at the time.

A determinization is built in the serialized form of
:meth:`MexicanTrain.to_dict` and loaded with :meth:`MexicanTrain.from_dict`,
so this module reads no engine internals. It relies on the keys of state
format ``STATE_FORMAT`` (2): ``hands`` (tile ids per seat), ``boneyard``
(tile ids, drawn from the end), ``trains`` (per slot, per branch ``[parent
end, open end, codes]`` with a code ``touching << 5 | open``), ``markers``,
``doubles`` (each a :class:`~engine.games.mexican_train.game.SavedDouble`,
oldest first), ``first_turn_pending``, ``turn`` (the turn in progress, a
:class:`~engine.games.mexican_train.game.SavedTurn`), ``round_scores``,
``over``, ``winners``, ``history`` and ``version``.

The view does not say which open doubles were played this turn, nor how many
doubles the turn has played (MT-DBL-2/3/4 read them), nor other seats'
first-turn flags (MT-FT-1). The turn's facts are inferred: every candidate
reading is tried, and the first whose legal moves equal the seat's is kept,
so a search's root offers exactly the seat's moves. Other seats' first turns
are taken as pending while their train is empty and unmarked.

The state is cut to end with the view's round (its ruleset's ``rounds`` is
set to the current one): a playout stops at the round's end instead of
dealing the next round.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Final

from engine.games.mexican_train.game import STATE_FORMAT, MexicanTrain, SavedDouble, SavedTurn
from engine.games.mexican_train.rules import FirstTurn, Ruleset
from engine.moves import END_TURN, Move, MoveKind, TrainKind, TrainRef
from engine.tiles import canonical_ids
from engine.view import GameView

#: The state format this module writes; a new format must be read here too.
FORMAT: Final = 2


class NoDeterminizationError(ValueError):
    """The view cannot be turned into a position (not the seat to move, or
    its counts or turn cannot be matched)."""


class Determinizer:
    """Deals the tiles ``view``'s seat has not seen into full positions.

    >>> import engine, random
    >>> game = engine.new_game("standard", 4, "det")
    >>> seat = game.current_seat
    >>> det = Determinizer(engine.build_view(game, seat), game.legal_moves())
    >>> sample = det.position(random.Random(1))
    >>> sample.hand(seat) == game.hand(seat), set(sample.legal_moves()) == set(game.legal_moves())
    (True, True)
    >>> len(det.unseen), len(sample.boneyard)  # 91 - the engine - 15 held; 30 to draw
    (75, 30)
    """

    def __init__(
        self, view: GameView, legal: Sequence[Move], game: type[MexicanTrain] = MexicanTrain
    ) -> None:
        """``game``: the class the positions are (Mexican Train, or a game
        built on its engine, as Chicken Foot is)."""
        if STATE_FORMAT != FORMAT:
            raise NoDeterminizationError(f"state format {STATE_FORMAT} is not {FORMAT}")
        seat = view.viewer_seat
        if view.over or view.turn is None or view.hand is None or seat is None:
            raise NoDeterminizationError("the view is not a seat's view of a game in progress")
        if view.current_seat != seat:
            raise NoDeterminizationError(f"seat {seat} is not the seat to move")
        self.seat: Final = seat
        players = len(view.players)
        self.players: Final = players
        self._game: Final = game
        rules = view.ruleset
        engine_rules = game.engine_ruleset_of(rules)
        if engine_rules is None:
            raise NoDeterminizationError(f"not a view of {game.name}")
        assert rules.set_max is not None
        personal = players if game.own_trains else 0
        mine = {t.id for t in view.hand}
        seen = set(mine)
        assert view.engine is not None  # a Mexican Train view
        seen.add(view.engine.id)
        trains: list[list[list[Any]]] = []
        for train in view.trains:
            if train.branches:
                parts = [
                    (
                        -1 if b.parent_end is None else b.parent_end,
                        -1 if b.open_end is None else b.open_end,
                        [t.a << 5 | t.b for t in b.tiles],
                    )
                    for b in train.branches
                ]
            else:
                parts = [(-1, train.open_ends[0], [t.a << 5 | t.b for t in train.tiles])]
            for _, _, codes in parts:
                # A code is ``touching << 5 | open``; the tile's id is ``low << 5 | high``.
                seen.update(c if c >> 5 <= c & 31 else (c & 31) << 5 | c >> 5 for c in codes)
            trains.append([[parent, value, codes] for parent, value, codes in parts])
        #: The tiles the seat has not seen, in canonical order.
        self.unseen: Final = [t for t in canonical_ids(rules.set_max) if t not in seen]
        counts = [p.hand_count for p in view.players]
        hidden = sum(c for s, c in enumerate(counts) if s != seat) + view.boneyard_count
        if hidden != len(self.unseen) or counts[seat] != len(mine):
            raise NoDeterminizationError(
                f"{len(self.unseen)} unseen tiles for {hidden} hidden places"
            )
        self._counts = counts
        self._mine = sorted(mine)
        doubles: list[SavedDouble] = [
            {
                "slot": _slot(d.train, personal),
                "end": d.train.end,
                "value": d.value,
                "answers": d.answers,
                "played_this_turn": False,
            }
            for d in view.open_doubles
        ]
        if personal:
            first = [
                not view.trains[s].tiles and not view.players[s].marker for s in range(players)
            ]
        else:
            first = [False] * players  # no own trains: only the view's seat is known
        first[seat] = view.turn.first_turn
        self._base: dict[str, Any] = {
            "format": FORMAT,
            "game": game.name,
            # Cut at this round: a playout ends with it (MT-RND-1 ``rounds``).
            "rules": rules.with_options(rounds=view.round).to_dict(),
            "players": players,
            "seed": "",
            "version": 0,
            "round": view.round,
            "starter": seat,
            "trains": trains,
            "markers": [p.marker for p in view.players],
            "first_turn_pending": first,
            "round_scores": [list(p.round_scores) for p in view.players],
            "over": False,
            "winners": [],
            "history": "",
        }
        self._engine_rules: Final = engine_rules
        self._turn, self._doubles = self._infer_turn(view, legal, doubles)

    # ------------------------------------------------------------ turn

    def _infer_turn(
        self, view: GameView, legal: Sequence[Move], doubles: list[SavedDouble]
    ) -> tuple[SavedTurn, list[SavedDouble]]:
        """The first reading of the turn in progress whose legal moves are ``legal``."""
        want = set(legal)
        probe = random.Random(0)
        for turn, marked in _turn_readings(view, legal, len(doubles), self._engine_rules):
            trial = [d.copy() for d in doubles]
            for d in trial[len(trial) - marked :] if marked else ():
                d["played_this_turn"] = True  # MT-DBL-3: played this turn, not blocking yet
            self._turn, self._doubles = turn, trial
            if set(self.position(probe).legal_moves()) == want:
                return turn, trial
        raise NoDeterminizationError("no reading of the turn gives the seat's legal moves")

    # ------------------------------------------------------------ sampling

    def sample(self, rng: random.Random) -> dict[str, Any]:
        """One determinization as state data (load it with :meth:`MexicanTrain.from_dict`;
        the data may be loaded many times)."""
        pool = self.unseen[:]
        rng.shuffle(pool)
        hands: list[list[int]] = []
        at = 0
        for s, count in enumerate(self._counts):
            if s == self.seat:
                hands.append(self._mine)
            else:
                hands.append(pool[at : at + count])
                at += count
        data = dict(self._base)
        data["hands"] = hands
        data["boneyard"] = pool[at:]
        data["doubles"] = self._doubles
        data["turn"] = self._turn
        return data

    def position(self, rng: random.Random) -> MexicanTrain:
        """One determinization as a game."""
        return self._game.from_dict(self.sample(rng))


def _slot(ref: TrainRef, personal: int) -> int:
    return ref.number if ref.kind is TrainKind.SEAT else personal + ref.number


def _turn_readings(
    view: GameView, legal: Sequence[Move], open_doubles: int, rules: Ruleset
) -> list[tuple[SavedTurn, int]]:
    """Candidate ``turn`` fields with how many of the newest open doubles were
    played this turn, most likely first."""
    assert view.turn is not None
    seat = view.current_seat
    assert seat is not None  # Determinizer checked it
    owes = view.turn.owes_tile
    drew = view.turn.drew_this_turn
    plays = [m for m in legal if m.kind is MoveKind.PLAY]
    # MT-DR-1 / MT-DBL-6: after a draw the turn goes on only to play the drawn tile
    # (forced), or, once a drawn double is played, to meet its new debt; a double
    # matches the end it went on, so the seat then has no play, only a draw or a
    # pass, and nothing is forced. ``drew`` stays true for the rest of the turn
    # (API.md turn.drewThisTurn), which also ends a chain first turn (MT-FT-3).
    forced = -1
    if drew and plays:
        tile = plays[0].tile
        assert tile is not None
        forced = tile.id
    # A tile was played this turn when one is owed (MT-DBL-1) or a chain may end
    # (MT-FT-1); a chain that cannot go on offers END_TURN, never a draw.
    played = 1 if owes or END_TURN in legal else 0
    chain_turn = rules.first_turn is FirstTurn.CHAIN and view.turn.first_turn
    one_double = rules.max_doubles_per_turn == 1
    # Doubles played this turn are the newest open ones; while a tile is owed the
    # newest is most likely the one just played (unless it died at once, MT-DBL-5).
    if not played:
        marks = [0]
    elif owes:
        marks = [*range(1, open_doubles + 1), 0]
    else:
        marks = list(range(open_doubles + 1))
    readings: list[tuple[SavedTurn, int]] = []
    for marked in marks:
        doubles_played = [max(marked, 1 if owes else 0)]
        if one_double and played and doubles_played[0] == 0:
            doubles_played.append(1)  # a chain may have covered its double (MT-DBL-4)
        lasts = [open_doubles - 1, -1] if owes and marked else [-1]
        # MT-FT-2: a blocking double at the start of a chain first turn cancels the chain.
        blocked_at_start = rules.open_doubles_block and open_doubles > marked
        chains = [not blocked_at_start, blocked_at_start] if chain_turn else [False]
        for dp in doubles_played:
            for last in lasts:
                for chain in chains:
                    turn: SavedTurn = {
                        "seat": seat,
                        "owes": owes,
                        "drew": drew,
                        "forced": forced,
                        "doubles_this_turn": dp,
                        "played_this_turn": played,
                        "penalties": 0,
                        "last_double": last,
                        "own_train_only": chain,
                        "chain_open": chain and not drew,
                    }
                    readings.append((turn, marked))
    return readings
