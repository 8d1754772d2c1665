"""``module:function`` bots on the engine alone, for ``railyard arena`` and
``railyard ladder``: the contract of railyard-bot's ``--module``
(clients/python/railyard_client/bot.py), so one bot file plays offline and
through the API alike.

The function is called as ``choose(view, legal)`` with the seat's
``pb.GameView`` and its ``pb.LegalMove`` list (each with its ``notation``),
and returns one of them, a ``pb.Move`` or a move's notation (``"5-12@p0"``).
The view is the message the service would send that seat, written by the
service's own converter from the seat's engine view
(``railyard_api.convert.view_to_proto``), so the bot sees what it would see
through the API and nothing more (MT-VIS-3). What only a served game has is
left empty: the game id, the display names, the turn timer.

The module must be importable: installed, or its directory on
``PYTHONPATH`` (the ``railyard`` command does not add the current one).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Sequence
from typing import Any

from engine.arena import Chooser
from engine.bots import LEVELS
from engine.moves import Move
from engine.view import GameView
from railyard_api import convert
from railyard_api import game_service_pb2 as pb

Choice = pb.LegalMove | pb.Move | str


def is_module_bot(name: str) -> bool:
    """Whether ``name`` is written ``module:function``."""
    return ":" in name


@functools.lru_cache(maxsize=64)
def load(spec: str) -> Callable[[pb.GameView, Sequence[pb.LegalMove]], Any]:
    """The function ``spec`` (``package.module:function``) names; ValueError
    saying what is wrong with it otherwise."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"bot {spec!r}: write a module bot as module:function")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # the bot's own import: a missing module or its own error
        hint = "; is its directory on PYTHONPATH?" if isinstance(exc, ImportError) else ""
        raise ValueError(
            f"bot {spec!r}: cannot import {module_name!r}: {type(exc).__name__}: {exc}{hint}"
        ) from exc
    found = getattr(module, attribute, None)
    if not callable(found):
        raise ValueError(f"bot {spec!r}: {module_name} has no function {attribute!r}")
    return found  # type: ignore[no-any-return]


def legal_moves(legal: Sequence[Move]) -> list[pb.LegalMove]:
    """The legal moves as ListLegalMoves lists them (the service's notation)."""
    return [pb.LegalMove(move=convert.move_to_proto(m), notation=str(m)) for m in legal]


def pick(choice: Choice, entries: Sequence[pb.LegalMove]) -> int:
    """Which of ``entries`` the bot's ``choice`` is (railyard-bot accepts the
    same three forms); ValueError when none."""
    for i, entry in enumerate(entries):
        if isinstance(choice, pb.LegalMove):
            if entry == choice:
                return i
        elif isinstance(choice, pb.Move):
            if entry.move == choice:
                return i
        elif entry.notation == choice:
            return i
    shown = choice.notation if isinstance(choice, pb.LegalMove) else choice
    raise ValueError(f"the bot chose {shown!r}, which is not a legal move now")


def module_bot(spec: str) -> Chooser:
    """The arena's chooser for the ``module:function`` bot ``spec`` (an
    :data:`engine.arena.BotMaker`: a module's function, so it pickles)."""
    if not is_module_bot(spec):
        raise ValueError(
            f"unknown bot level {spec!r}; known: {', '.join(LEVELS)}, or a module:function bot"
        )
    choose = load(spec)

    def decide(view: GameView, legal: Sequence[Move]) -> Move:
        seats = len(view.players)
        message = convert.view_to_proto(view, "", [""] * seats, [0] * seats)
        entries = legal_moves(legal)
        return legal[pick(choose(message, entries), entries)]

    return decide
