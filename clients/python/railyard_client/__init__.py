"""A typed Python client for Railyard (API.md): gRPC and HTTP/JSON, blocking
and asyncio, watches that resume, retries made safe by ``requestId``, and a
verifier that re-deals a finished game from its revealed seed.

>>> from railyard_client import Client, pb
>>> isinstance(pb.Move(draw=pb.Move.Draw()), pb.Move)
True
"""

from railyard_api import game_service_pb2 as pb

from railyard_client._common import RetryPolicy, new_request_id
from railyard_client.client import AsyncClient, Client
from railyard_client.errors import RailyardError
from railyard_client.verify import DealMismatchError, Report, shuffle, verify_game

__all__ = [
    "AsyncClient",
    "Client",
    "DealMismatchError",
    "RailyardError",
    "Report",
    "RetryPolicy",
    "new_request_id",
    "pb",
    "shuffle",
    "verify_game",
]
