"""requestId: a repeated request gets the first one's answer (API.md).

The store keeps a request's answer with the commit that made it, under a key
of its game: ApplyMove's behind the fingerprint of what it asked, so that
the id reused for another move is refused; CreateGame's without seat
tokens, which a replay derives again only for the API key that created the
game (service.app.tenants).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Final

from railyard_api import game_service_pb2 as pb
from service.app import errors as err
from service.app.admission import Caller
from service.app.games import GAME_ID_LEN, Games, hash_token
from service.app.tenants import seat_token_of
from service.store import StoreUnavailableError

#: Marks a remembered ApplyMove answer that starts with its request's
#: fingerprint (32 bytes). A serialized ApplyMoveResponse never starts with a
#: zero byte (field number 0 does not exist), so older entries are told apart.
REMEMBERED: Final = b"\x00"


def fingerprint(request: pb.ApplyMoveRequest) -> bytes:
    """What a retry must repeat: the move and the expectedVersion (the same
    from either transport, whatever the JSON looked like)."""
    digest = hashlib.sha256(request.move.SerializeToString(deterministic=True))
    if request.HasField("expected_version"):
        digest.update(b"\0%d" % request.expected_version)
    return digest.digest()


def create_key(request: pb.CreateGameRequest, tenant: str | None) -> tuple[str, str]:
    """A CreateGame with a requestId: its game's id and the key its answer
    is remembered under.

    A retry must land on the same game: its id follows from the request, and
    from its tenant, so that another tenant's same body and id make a game
    of their own."""
    scope = b"create\0" if tenant is None else b"create\0tenant\0%s\0" % tenant.encode()
    digest = hashlib.sha256(scope + request.SerializeToString(deterministic=True))
    game_id = digest.hexdigest()[:GAME_ID_LEN]
    key = f"create:{request.request_id}"
    if tenant is not None:
        key = f"create:{tenant}:{request.request_id}"
    return game_id, key


def replayed(remembered: bytes) -> pb.CreateGameResponse:
    """The answer to a repeated CreateGame: the game as first created, no tokens."""
    response = pb.CreateGameResponse.FromString(remembered)
    response.replayed = True
    return response


async def recall(
    games: Games, request: pb.ApplyMoveRequest, key: str, digest: bytes
) -> pb.ApplyMoveResponse | None:
    """The answer remembered for this request id, if any; refused when
    the id was first used for a different request (API.md: a *repeated*
    request gets the first answer; another move under a used id would
    otherwise get an answer that is not about it, and apply nothing).
    ``digest``: the request's :func:`fingerprint`."""
    try:
        data = await games.store.recall(request.game_id, key)
    except StoreUnavailableError as exc:
        raise games.store_failed(exc) from exc
    if data is None:
        return None
    if data.startswith(REMEMBERED):
        first, data = data[1:33], data[33:]
        if first != digest:
            raise err.invalid(
                f"requestId {request.request_id!r} was used for another move or "
                "expectedVersion of this seat: give each new request a new id",
                field="requestId",
            )
    # (Without the prefix: remembered by an older version, not checked.)
    # The remembered bytes are parsed: a retry's answer is then written by
    # the same code as the first one, so both transports repeat it exactly.
    return pb.ApplyMoveResponse.FromString(data)


async def replayed_for(
    games: Games, game_id: str, remembered: bytes, caller: Caller, tenant: str | None
) -> tuple[pb.CreateGameResponse, bool]:
    """A repeated CreateGame's answer, and whether its game is in
    progress. With a tenant, the seat tokens are derived again from the
    caller's key (service.app.tenants.seat_token_of) and handed back only if
    they are the game's: a key that created the game recovers them, any
    other (a rotated key of the same tenant) gets none."""
    response = replayed(remembered)
    if tenant is None or not caller.api_key:
        return response, True  # no token either way; the count is not ours to settle
    loaded = await games.load(game_id)
    tokens = {
        seat: seat_token_of(caller.api_key, game_id, seat)
        for seat, stored in enumerate(loaded.seats.token_hashes)
        if stored
    }
    if tokens and all(
        hmac.compare_digest(hash_token(t), loaded.seats.token_hashes[s]) for s, t in tokens.items()
    ):
        response.seats.extend(pb.SeatToken(seat=s, token=t) for s, t in tokens.items())
    return response, not loaded.game.over
