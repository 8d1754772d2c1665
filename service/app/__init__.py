"""The application layer: the one implementation both transports call.

Each call loads the game from the store, asks the engine, and saves with one
atomic compare-and-set on the version; nothing about a game is kept in this
process between requests. gRPC handlers and HTTP routes only translate their
wire into the calls of :class:`GameApp` (service.app.facade) and
:class:`~service.app.errors.ServiceError` back out.

Its concerns, one module each: service.app.admission (callers, rate limits,
tenants' caps), service.app.games (the stored game: load, commit),
service.app.idempotency (requestId replays), service.app.turns (the bots'
and timed-out turns, background play) and service.app.watching (WatchGame,
GetGameLog). The modules of this package import one another, never this
file.
"""

from service.app.admission import Caller
from service.app.facade import MAX_NAME, MAX_REQUEST_ID, MAX_SEED, GameApp
from service.app.games import Seats

__all__ = ["MAX_NAME", "MAX_REQUEST_ID", "MAX_SEED", "Caller", "GameApp", "Seats"]
