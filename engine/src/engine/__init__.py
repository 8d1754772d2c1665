"""Railyard's rules engine: every game of RULES.md, every option, no I/O.

>>> import engine
>>> game = engine.new_game("standard", players=4, seed="demo")
>>> move = game.legal_moves()[0]
>>> events = game.apply(move)
>>> game.version, engine.load(game.to_bytes()) == game
(1, True)

Bots decide from a seat's view alone (``engine.bots``):

>>> view = engine.build_view(game, game.current_seat)
>>> engine.choose("greedy", view, game.legal_moves(), engine.bot_key(view)) in game.legal_moves()
True
"""

# First: whether the modules below load compiled or from source (engine.native).
from engine import native
from engine.bots import LEVELS as BOT_LEVELS
from engine.bots import bot_key, choose
from engine.errors import (
    ILLEGAL_REASONS,
    CorruptStateError,
    DealDoesNotFitError,
    GameOverError,
    IllegalMoveError,
    MalformedMoveError,
    MoveError,
    NotYourTurnError,
    RailyardError,
    RulesetError,
)
from engine.events import (
    DoubleSatisfied,
    Event,
    GameEnded,
    MarkerPlaced,
    MarkerRemoved,
    Passed,
    PointsReason,
    PointsScored,
    RoundEnded,
    RoundEndReason,
    RoundStarted,
    TileDrawn,
    TilePlayed,
    TurnStarted,
    for_seat,
)
from engine.game import GameSpec, GameState, GameStatus, Rules
from engine.games.mexican_train.game import MexicanTrain
from engine.games.mexican_train.rules import (
    DoubleAnswer,
    DoubleFollowup,
    EnginePlacement,
    FirstPlayer,
    FirstTurn,
    HandSizeTable,
    KnockRule,
    Ruleset,
)
from engine.moves import (
    DRAW,
    END_TURN,
    PASS,
    Move,
    MoveKind,
    TrainKind,
    TrainRef,
    format_move,
    parse_move,
)
from engine.registry import (
    GAMES,
    MAX_PLAYERS,
    PRESETS,
    game_spec,
    load,
    load_dict,
    new_game,
    preset,
    replay,
    ruleset,
)
from engine.tiles import Tile
from engine.view import GameView, build_view

__all__ = [
    "BOT_LEVELS",
    "DRAW",
    "END_TURN",
    "GAMES",
    "ILLEGAL_REASONS",
    "MAX_PLAYERS",
    "PASS",
    "PRESETS",
    "CorruptStateError",
    "DealDoesNotFitError",
    "DoubleAnswer",
    "DoubleFollowup",
    "DoubleSatisfied",
    "EnginePlacement",
    "Event",
    "FirstPlayer",
    "FirstTurn",
    "GameEnded",
    "GameOverError",
    "GameSpec",
    "GameState",
    "GameStatus",
    "GameView",
    "HandSizeTable",
    "IllegalMoveError",
    "KnockRule",
    "MalformedMoveError",
    "MarkerPlaced",
    "MarkerRemoved",
    "MexicanTrain",
    "Move",
    "MoveError",
    "MoveKind",
    "NotYourTurnError",
    "Passed",
    "PointsReason",
    "PointsScored",
    "RailyardError",
    "RoundEndReason",
    "RoundEnded",
    "RoundStarted",
    "Rules",
    "Ruleset",
    "RulesetError",
    "Tile",
    "TileDrawn",
    "TilePlayed",
    "TrainKind",
    "TrainRef",
    "TurnStarted",
    "bot_key",
    "build_view",
    "choose",
    "for_seat",
    "format_move",
    "game_spec",
    "load",
    "load_dict",
    "native",
    "new_game",
    "parse_move",
    "preset",
    "replay",
    "ruleset",
]
