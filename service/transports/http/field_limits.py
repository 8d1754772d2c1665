"""What the service refuses of one request field on its own, as data.

Each row is keyed by the proto full name of a field, or of a oneof, and
:mod:`service.transports.http.openapi` writes it into the OpenAPI document, so that the
schema admits what the validators admit. Every bound is the validator's own
constant, imported from where it is checked: a bound changed there changes
the document. A new option with a bound needs one row here. Responses share
the components, and keep to every row too (tests/test_http.py checks real
answers against them).

Not here: what depends on more than one field or on the game, which no
schema of one field can say (CreateGame's description lists it): a deal
that must fit the set (DEAL_DOES_NOT_FIT), ``firstEngine`` within the set
and ``rounds`` within the engines (MT-RND-1), the options a game has and the
classic games' smaller sets (CL-SET-1), teams of four (CL-TEAM-1), Chicken
Foot's 2 to 8 players and its rounds, at most one per double of the set
(CL-CF-1), a tile in the hand, a train that exists.
"""

from __future__ import annotations

from typing import Final

from engine import MAX_PLAYERS, PRESETS
from engine.games.chicken_foot.rules import CENTER_LINES
from engine.games.line.rules import MIN_TARGET_SCORE, RESERVES
from engine.games.mexican_train.rules import (
    DOUBLE_BLANK_VALUES,
    DOUBLES_PER_TURN_VALUES,
    MAX_KNOCK_PENALTY,
    MAX_MEXICAN_TRAINS,
    MIN_HAND_SIZE,
    MIN_MEXICAN_TRAINS,
    MIN_PLAYERS,
    MIN_ROUNDS,
)
from engine.tiles import MAX_SET, MIN_SET
from railyard_api import convert
from railyard_api import game_service_pb2 as pb
from service.app import MAX_NAME, MAX_REQUEST_ID, MAX_SEED
from service.transports.http.openapi import Limits

_RULESET: Final = pb.Ruleset.DESCRIPTOR


def _set_values(option: str) -> Limits:
    """An enum option of a ruleset: any of its values but the zero one
    (``*_UNSPECIFIED``), which convert.ruleset_from_proto refuses."""
    enum = _RULESET.fields_by_name[option].enum_type
    assert enum is not None, option
    return Limits(values=tuple(value.name for value in enum.values if value.number != 0))


#: Field (or oneof) full name -> what the service admits of it.
FIELD_LIMITS: Final[dict[str, Limits]] = {
    # CreateGame: service.app.GameApp.create_game (the most any game seats; each
    # game's own bound, MT-SET-2 or CL-SET-1, depends on the ruleset).
    "railyard.v1.CreateGameRequest.players": Limits(
        required=True, min_items=MIN_PLAYERS, max_items=MAX_PLAYERS
    ),
    "railyard.v1.CreateGameRequest.seed": Limits(max_length=MAX_SEED),
    "railyard.v1.CreateGameRequest.request_id": Limits(max_length=MAX_REQUEST_ID),
    "railyard.v1.Player.display_name": Limits(max_length=MAX_NAME),
    # Ruleset: railyard_api.convert.ruleset_from_proto,
    # engine.games.mexican_train.rules.Ruleset._check and
    # engine.games.line.rules.LineRules.__post_init__.
    **{f"{_RULESET.full_name}.{option}": _set_values(option) for option in convert.RULESET_ENUMS},
    "railyard.v1.Ruleset.preset": Limits(values=tuple(PRESETS)),
    "railyard.v1.Ruleset.game": Limits(
        values=tuple(pb.Game.Name(number) for number in convert.GAMES_PLAYED)
    ),
    "railyard.v1.Ruleset.set_max": Limits(minimum=MIN_SET, maximum=MAX_SET),  # T-1
    "railyard.v1.Ruleset.hand_size": Limits(minimum=MIN_HAND_SIZE),  # MT-DEAL-1
    "railyard.v1.Ruleset.rounds": Limits(minimum=MIN_ROUNDS),  # MT-RND-1
    "railyard.v1.Ruleset.first_engine": Limits(maximum=MAX_SET),  # MT-RND-1
    "railyard.v1.Ruleset.mexican_trains": Limits(  # MT-TR-2
        minimum=MIN_MEXICAN_TRAINS, maximum=MAX_MEXICAN_TRAINS
    ),
    "railyard.v1.Ruleset.max_doubles_per_turn": Limits(values=DOUBLES_PER_TURN_VALUES),  # MT-DBL-4
    "railyard.v1.Ruleset.knock_penalty": Limits(maximum=MAX_KNOCK_PENALTY),  # MT-KNOCK-1
    "railyard.v1.Ruleset.double_blank_value": Limits(values=DOUBLE_BLANK_VALUES),  # T-3
    # The classic games' and Chicken Foot's options (engine.games.line.rules.LineRules,
    # engine.games.chicken_foot.rules.ChickenFootRules): which game has which
    # is a rule of more than one field (CL-SET-1), not here; ``teams`` is any bool.
    "railyard.v1.Ruleset.boneyard_reserve": Limits(values=RESERVES),  # CL-DRAW-1
    "railyard.v1.Ruleset.target_score": Limits(minimum=MIN_TARGET_SCORE),  # CL-SC-2
    "railyard.v1.Ruleset.center_lines": Limits(values=CENTER_LINES),  # CL-CF-1
    # ApplyMove: service.app.GameApp.apply_move and railyard_api.convert.move_from_proto.
    "railyard.v1.ApplyMoveRequest.move": Limits(required=True),
    "railyard.v1.ApplyMoveRequest.request_id": Limits(max_length=MAX_REQUEST_ID),
    "railyard.v1.Move.action": Limits(required=True),
    "railyard.v1.Move.Play.tile": Limits(required=True),  # T-2
    "railyard.v1.Move.Play.train": Limits(required=True),
    "railyard.v1.TrainRef.target": Limits(required=True),
    "railyard.v1.Tile.a": Limits(maximum=MAX_SET),  # T-1
    "railyard.v1.Tile.b": Limits(maximum=MAX_SET),
}
