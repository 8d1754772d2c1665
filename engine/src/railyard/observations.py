"""A seat's view as fixed-shape numpy arrays (MT-VIS-1/2/3, CL-VIS-1).

:meth:`ObservationEncoder.encode` reads a :class:`~engine.GameView` and
nothing else: the view ``engine.build_view(game, seat)`` gives, which holds
the public table and that seat's own hand. So an observation cannot carry a
tile of another hand or of the boneyard: the encoder is never handed them.

Shapes depend on the resolved rules and the player count only. With T the
set's tiles, N its highest double, P the players:

every game
    ``hand`` (T,) 0/1 the seat's tiles, canonical tile order (T-2);
    ``table`` (T,) 0/1 tiles face up on the table (the engine/station too);
    ``seat`` (P,) one-hot, whose view it is; ``current_seat`` (P,) one-hot,
    the seat to move (all 0 once over); ``hand_counts`` (P,);
    ``scores`` (P,) each seat's score; ``boneyard_count`` (1,);
    ``round`` (1,) the round (Mexican Train, Chicken Foot) or hand (line
    games) being played; ``turn`` (3,) 0/1 owes a tile (MT-DBL-1), drew
    this turn, first turn of the round (MT-FT-1; line games: CL-TURN-1).

Mexican Train and Chicken Foot, with S trains (MT: P seats' then the
Mexican trains; CF: the lines) of E ends each (1, or 1 + 3N with chicken
feet, MT-DBL-7), R rounds:
    ``engine`` (1,) the round's engine (station) number;
    ``open_ends`` (S, E) the number a tile must match at each end, -1 where
    no end is open (an end not opened yet, a trunk closed by its foot);
    ``markers`` (P,) 0/1 (MT-TR-4); ``tile_train`` (T,) the train each tile
    lies on, -1 off the trains; ``tile_end`` (T,) its end (branch), -1 off;
    ``open_doubles`` (N, 4) ``[train, end, number, answers]`` of each
    unsatisfied double, oldest first (the one that blocks, MT-DBL-3/4), rows
    of -1 after; ``round_scores`` (P, R) each round's score, -1 for rounds
    not scored yet (MT-SC-1/3).

the line games
    ``line_ends`` (2,) left and right open number, -1 before the opening;
    ``line`` (T, 2) the line from left to right, each row the tile's
    ``(left half, right half)``, rows of -1 after its last tile.

>>> import engine
>>> game = engine.new_game("block", 2, "doc")
>>> encoder = ObservationEncoder(game.rules, 2)
>>> obs = encoder.encode(engine.build_view(game, 1))
>>> int(obs["hand"].sum()), obs["line_ends"].tolist(), obs["seat"].tolist()
(7, [-1, -1], [0, 1])
>>> encoder.space.contains(obs)
True
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from engine import GameView, Ruleset, Tile, TrainKind, TrainRef
from engine.game import Rules
from engine.games.chicken_foot.rules import ChickenFootRules
from engine.tiles import set_size
from railyard.actions import train_shape

_SCORE_MAX: Final = int(np.iinfo(np.int32).max)

#: An observation: field name to array, as :attr:`ObservationEncoder.space` declares.
Observation = dict[str, npt.NDArray[np.generic]]


def _box(
    low: int,
    high: int | npt.NDArray[np.int64],
    shape: tuple[int, ...],
    dtype: type[np.signedinteger[Any]],
) -> spaces.Box:
    return spaces.Box(low=low, high=high, shape=shape, dtype=dtype)


class ObservationEncoder:
    """The observation space of one game (rules resolved for a player count),
    and the function from a seat's view into it."""

    def __init__(self, rules: Rules, players: int) -> None:
        resolved = rules.resolve(players)
        if resolved.set_max is None:  # resolve() fills it; the check is for the type
            raise ValueError(f"{rules.game} rules without a set for {players} players")
        self.players: Final = players
        self.set_max: Final = resolved.set_max
        n, p = self.set_max, players
        t = set_size(n)
        canonical = [(a, b) for a in range(n + 1) for b in range(a, n + 1)]
        # Both orientations: a train's tiles lie touching-open (API.md), the line's
        # left-right, and a Tile is a tuple, so one lookup serves every tile.
        self._tile_index: Final = {
            pair: i for i, (a, b) in enumerate(canonical) for pair in ((a, b), (b, a))
        }
        shape = train_shape(resolved, p)
        #: Whether the table is a line (the line games) or trains.
        self.is_line: Final = shape is None
        fields: dict[str, spaces.Space[Any]] = {
            "hand": _box(0, 1, (t,), np.int8),
            "table": _box(0, 1, (t,), np.int8),
            "seat": _box(0, 1, (p,), np.int8),
            "current_seat": _box(0, 1, (p,), np.int8),
            "hand_counts": _box(0, t, (p,), np.int16),
            "scores": _box(0, _SCORE_MAX, (p,), np.int32),
            "boneyard_count": _box(0, t, (1,), np.int16),
            "round": _box(0, _SCORE_MAX, (1,), np.int32),
            "turn": _box(0, 1, (3,), np.int8),
        }
        if shape is None:
            fields["line_ends"] = _box(-1, n, (2,), np.int8)
            fields["line"] = _box(-1, n, (t, 2), np.int8)
            self.trains = self.ends = self.rounds = self._personal = 0
        else:
            self._personal, self.trains, self.ends = shape
            assert isinstance(resolved, Ruleset | ChickenFootRules)  # train_shape says so
            assert resolved.rounds is not None  # resolved: MT-RND-1
            self.rounds = resolved.rounds
            s, e = self.trains, self.ends
            # MT-DBL-1: at most the N doubles a round can play are open at once.
            doubles_high = np.tile(np.array([s - 1, e - 1, n, 3], dtype=np.int64), (n, 1))
            fields |= {
                "engine": _box(-1, n, (1,), np.int8),
                "open_ends": _box(-1, n, (s, e), np.int8),
                "markers": _box(0, 1, (p,), np.int8),
                "tile_train": _box(-1, s - 1, (t,), np.int8),
                "tile_end": _box(-1, e - 1, (t,), np.int8),
                "open_doubles": _box(-1, doubles_high, (n, 4), np.int8),
                "round_scores": _box(-1, _SCORE_MAX, (p, self.rounds), np.int32),
            }
        #: The ``"observation"`` part of the env's observation space.
        self.space: Final = spaces.Dict(fields)
        self._tiles: Final = t

    def tile_index(self, tile: Tile) -> int:
        """The index of ``tile`` (either orientation) in the canonical order (T-2)."""
        return self._tile_index[tile]

    def _slot(self, ref: TrainRef) -> int:
        return ref.number if ref.kind is TrainKind.SEAT else self._personal + ref.number

    def encode(self, view: GameView) -> Observation:
        """The arrays of ``view`` (new arrays each call: callers keep them)."""
        if len(view.players) != self.players:
            raise ValueError(f"a {len(view.players)}-player view, not {self.players}")
        p, t = self.players, self._tiles
        index = self._tile_index.__getitem__
        hand = np.zeros(t, dtype=np.int8)
        hand[list(map(index, view.hand or ()))] = 1
        seat = np.zeros(p, dtype=np.int8)
        if view.viewer_seat is not None:
            seat[view.viewer_seat] = 1
        current = np.zeros(p, dtype=np.int8)
        if view.current_seat is not None:
            current[view.current_seat] = 1
        turn = view.turn
        obs: Observation = {
            "hand": hand,
            "seat": seat,
            "current_seat": current,
            "hand_counts": np.array([pl.hand_count for pl in view.players], dtype=np.int16),
            "scores": np.array([pl.score for pl in view.players], dtype=np.int32),
            "boneyard_count": np.array([view.boneyard_count], dtype=np.int16),
            "round": np.array([view.round], dtype=np.int32),
            "turn": np.array(
                [0, 0, 0]
                if turn is None
                else [turn.owes_tile, turn.drew_this_turn, turn.first_turn],
                dtype=np.int8,
            ),
        }
        table = np.zeros(t, dtype=np.int8)
        if self.is_line:
            line_ends = np.full(2, -1, dtype=np.int8)
            line = np.full((t, 2), -1, dtype=np.int8)
            if view.line is not None:
                if view.line.open_ends:
                    line_ends[:] = view.line.open_ends
                tiles = view.line.tiles
                if tiles:
                    line[: len(tiles)] = tiles  # each row (left half, right half): CL-LINE-1
                    table[list(map(index, tiles))] = 1
            obs |= {"table": table, "line_ends": line_ends, "line": line}
            return obs
        s, e, n = self.trains, self.ends, self.set_max
        open_ends = np.full((s, e), -1, dtype=np.int8)
        tile_train = np.full(t, -1, dtype=np.int8)
        tile_end = np.full(t, -1, dtype=np.int8)
        if view.engine is not None:
            table[index(view.engine)] = 1  # the station's double is on the table (MT-DBL-5)
        for train in view.trains:
            slot = self._slot(train.ref)
            if train.branches:
                # MT-DBL-7: each branch by its end number; the trunk is end 0.
                for branch in train.branches:
                    if branch.open_end is not None:
                        open_ends[slot, branch.end] = branch.open_end
                    laid = list(map(index, branch.tiles))
                    table[laid], tile_train[laid], tile_end[laid] = 1, slot, branch.end
            else:
                if train.open_ends:
                    open_ends[slot, 0] = train.open_ends[0]
                laid = list(map(index, train.tiles))
                table[laid], tile_train[laid], tile_end[laid] = 1, slot, 0
        doubles = np.full((n, 4), -1, dtype=np.int8)
        for row, double in enumerate(view.open_doubles):
            doubles[row] = (
                self._slot(double.train),
                double.train.end,
                double.value,
                double.answers,
            )
        round_scores = np.full((p, self.rounds), -1, dtype=np.int32)
        for s_, player in enumerate(view.players):
            round_scores[s_, : len(player.round_scores)] = player.round_scores
        obs |= {
            "table": table,
            "engine": np.array([-1 if view.engine is None else view.engine.a], dtype=np.int8),
            "open_ends": open_ends,
            "markers": np.array([pl.marker for pl in view.players], dtype=np.int8),
            "tile_train": tile_train,
            "tile_end": tile_end,
            "open_doubles": doubles,
            "round_scores": round_scores,
        }
        return obs
