"""Mexican Train's views (MT-VIS-1/2/3): the one function that turns its state
into a :class:`~engine.view.GameView`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.tiles import TILES
from engine.view import BranchView, GameView, PlayerView, TrainView, TurnView

if TYPE_CHECKING:
    from engine.games.mexican_train.game import MexicanTrain


def mexican_train_view(game: MexicanTrain, seat: int | None = None) -> GameView:
    """The view of ``game`` for ``seat`` (``None``: a spectator, public only)."""
    if seat is not None and not 0 <= seat < game.players:
        raise ValueError(f"no seat {seat} in a {game.players}-player game")
    counts, markers, scores = game.counts, game.markers, game.round_scores
    players = tuple(
        [
            PlayerView(s, counts[s], markers[s], sum(scores[s]), tuple(scores[s]))  # MT-SC-2
            for s in range(game.players)
        ]
    )
    trains = []
    tile_of = TILES.__getitem__
    codes = game.tile_codes
    for slot in range(game.slot_count):
        ends = game.open_ends[slot]
        branches: tuple[BranchView, ...] = ()
        if len(ends) == 1:  # no chicken foot (most trains): the quick way
            trains.append(
                TrainView(
                    game.train_ref(slot),
                    tuple(map(tile_of, codes[slot][0])),  # a C loop, tile by tile
                    (ends[0],) if ends[0] >= 0 else (),
                    slot < game.personal_trains and game.markers[slot],
                )
            )
            continue
        if len(ends) > 1:
            branches = tuple(
                BranchView(
                    end,
                    None if parent < 0 else parent,
                    tuple(game.train_tiles_of(slot, end)),
                    None if value < 0 else value,
                )
                for end, (parent, value) in enumerate(
                    zip(game.parent_ends[slot], ends, strict=True)
                )
            )
        trains.append(
            TrainView(
                game.train_ref(slot),
                tuple(game.train_tiles_of(slot, 0)),
                tuple(v for v in ends if v >= 0),
                slot < game.personal_trains and game.markers[slot],
                branches,
            )
        )
    over = game.is_over()
    return GameView(
        version=game.version,
        status=game.status,
        over=over,
        ruleset=game.rules,
        round=game.round,
        rounds_total=game.rounds_total,
        engine=game.engine,
        current_seat=None if over else game.current_seat,
        boneyard_count=len(game.boneyard),
        players=players,
        trains=tuple(trains),
        open_doubles=tuple(game.open_doubles()),
        turn=None
        if over
        else TurnView(game.owes, game.drew, game.first_turn_pending[game.current_seat]),
        hand=None if seat is None else tuple(game.hand(seat)),
        viewer_seat=seat,
        seed_sha256=game.seed_sha256,
        seed=game.seed if over else None,  # MT-FAIR-1: revealed once over
        winners=game.winners,
    )
