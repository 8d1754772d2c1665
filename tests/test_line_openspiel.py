"""Block against OpenSpiel's Python dominoes, from the same deals (CL-START-1
``seat0_any``, CL-SC-1 ``opponents_total``, CL-TEAM-1).

OpenSpiel's ``python_block_dominoes`` (2 players) and
``python_team_dominoes`` (4, partners 0+2 and 1+3) deal by chance nodes:
the first deals seat 0's seven tiles then seat 1's, the second deals round
robin (tile k to player k mod 4). Each test sets those chance outcomes to
our deal (API.md's shuffle), then plays random moves on both and checks at
every step that the seat to move and its legal moves agree. OpenSpiel names
a play by (tile, the end value it covers) and skips a player who cannot
move, where we list a play per end and an explicit PASS; so legal moves are
compared as sets of (tile, end value), and our PASS is matched by
OpenSpiel's moving on to the next player. At the hand's end OpenSpiel's
returns must equal ours: always for 2 players; for teams after a block
(after a domino OpenSpiel still compares combined totals, RULES.md
CL-TEAM-1, and we do not).

``open_spiel`` is a dev dependency (pyproject.toml, locked): without it
these tests fail rather than skip.
"""

from __future__ import annotations

import random

import pyspiel

# Imported for what importing them does: register python_block_dominoes and
# python_team_dominoes with pyspiel.
from open_spiel.python.games import block_dominoes, team_dominoes

from engine.events import RoundEnded, RoundEndReason
from engine.games.line import PRESETS, LineGame
from engine.moves import MoveKind

RULES = PRESETS["block"].with_options(opening="seat0_any", blocked_scoring="opponents_total")
TEAM_RULES = PRESETS["block_teams"].with_options(
    opening="seat0_any", blocked_scoring="opponents_total"
)


def _action_index(module: object) -> dict[tuple[int, tuple[int, int], int | None], int]:
    """OpenSpiel's action ids by (player, tile, covered end value or None)."""
    out = {}
    for i, action in enumerate(module._ACTIONS):  # type: ignore[attr-defined]
        tile = (int(action.tile[0]), int(action.tile[1]))
        edge = None if action.edge is None else int(action.edge)
        out[action.player, tile, edge] = i
    return out


def _os_legal(module: object, state: object) -> set[tuple[tuple[int, int], int | None]]:
    actions = module._ACTIONS  # type: ignore[attr-defined]
    out = set()
    for i in state.legal_actions():  # type: ignore[attr-defined]
        action = actions[i]
        edge = None if action.edge is None else int(action.edge)
        out.add(((int(action.tile[0]), int(action.tile[1])), edge))
    return out


def _our_legal(game: LineGame) -> set[tuple[tuple[int, int], int | None]]:
    ends = game.open_ends
    out = set()
    for move in game.legal_moves():
        assert move.kind is MoveKind.PLAY
        assert move.tile is not None
        assert move.train is not None
        edge = ends[move.train.end] if ends else None
        out.add(((move.tile.a, move.tile.b), edge))
    return out


def _deal_outcome(module: object, tile: tuple[int, int]) -> int:
    return module._DECK.index((float(tile[0]), float(tile[1])))  # type: ignore[attr-defined]


def _play_hand(game: LineGame, state: object, module: object, seed: int) -> RoundEnded:
    """Random moves on both until our first hand ends; checks every step."""
    index = _action_index(module)
    rng = random.Random(seed)
    while True:
        seat = game.current_seat
        legal = game.legal_moves()
        if legal[0].kind is MoveKind.PASS:
            # OpenSpiel skips this seat: it is not to move there.
            assert state.current_player() != seat  # type: ignore[attr-defined]
            events = game.apply(legal[0])
        else:
            assert state.current_player() == seat  # type: ignore[attr-defined]
            assert _our_legal(game) == _os_legal(module, state)
            move = legal[rng.randrange(len(legal))]
            assert move.tile is not None
            assert move.train is not None
            edge = game.open_ends[move.train.end] if game.open_ends else None
            state.apply_action(index[seat, (move.tile.a, move.tile.b), edge])  # type: ignore[attr-defined]
            events = game.apply(move)
        ended = [e for e in events if isinstance(e, RoundEnded)]
        if ended:
            assert state.is_terminal()  # type: ignore[attr-defined]
            return ended[0]
        assert not state.is_terminal()  # type: ignore[attr-defined]


def test_two_player_block_plays_and_scores_as_openspiel() -> None:
    os_game = pyspiel.load_game("python_block_dominoes")
    blocked = 0
    for k in range(1000):
        game = LineGame(RULES, 2, f"openspiel-{k}")
        state = os_game.new_initial_state()
        for seat in (0, 1):
            for tile in game.hand(seat):
                state.apply_action(_deal_outcome(block_dominoes, tile))
        assert state.current_player() == 0
        ended = _play_hand(game, state, block_dominoes, k)
        returns = state.returns()
        assert [max(int(r), 0) for r in returns] == list(ended.scores)
        if ended.winner is None:
            assert returns == [0, 0]
        blocked += ended.reason is RoundEndReason.BLOCKED
    assert blocked > 0  # both ends of a hand were compared


def test_team_block_plays_as_openspiel_and_scores_blocks_alike() -> None:
    os_game = pyspiel.load_game("python_team_dominoes")
    blocked = 0
    for k in range(500):
        game = LineGame(TEAM_RULES, 4, f"openspiel-team-{k}")
        state = os_game.new_initial_state()
        hands = [game.hand(seat) for seat in range(4)]
        for i in range(28):
            state.apply_action(_deal_outcome(team_dominoes, hands[i % 4][i // 4]))
        assert state.current_player() == 0
        ended = _play_hand(game, state, team_dominoes, k)
        if ended.reason is RoundEndReason.BLOCKED:
            blocked += 1
            returns = state.returns()
            team_scores = [ended.scores[0] + ended.scores[2], ended.scores[1] + ended.scores[3]]
            assert [max(int(r), 0) for r in returns[:2]] == team_scores
    assert blocked > 0
