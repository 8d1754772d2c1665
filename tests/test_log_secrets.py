"""No secret in any log line, at any level (service/ops/redaction.py): seat
tokens, API keys and ``authorization`` headers are redacted by the filter on
the process's one log handler, every library logger reaches that handler,
and gRPC's C-core traces, which write to stderr past it, stay off."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
import secrets
import sys
from pathlib import Path

import grpc
import httpx
import pytest

from railyard_api import game_service_pb2 as pb
from railyard_api import game_service_pb2_grpc as pb_grpc
from service.app import Caller
from service.app.tenants import plain_keys
from service.ops.redaction import REDACTED, RedactSecrets
from service.ops.telemetry import log_handler, through_root
from tests.service_helpers import error_info
from tests.test_service_resilience import serve

TOKEN = "ChpZgivROzpupRwlAA2JE4OfhAiZktO6"  # the shape of service.app.games.new_seat_token's
KEY = "acme-key-0123456789abcdef"
#: The engine of a double-12 round, set aside: in no hand, so never a legal play (MT-ENG-1).
TILE = pb.Tile(a=12, b=12)


def redacted(text: str, *literals: str) -> str:
    return RedactSecrets(literals).redact(text)


# ------------------------------------------------------------------ the filter


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # hpack's lines (the HTTP/2 library's debug log of every header)
        (
            f"Decoded (b'authorization', b'Bearer {TOKEN}'), total consumed 55 bytes",
            "Decoded (b'authorization', b'[redacted]'), total consumed 55 bytes",
        ),
        (
            f"Evicting b'x-api-key': b'{KEY}' from the table",
            "Evicting b'x-api-key': b'[redacted]' from the table",
        ),
        (
            f"Adding b'X-Api-Key'=b'{KEY}' to the table",
            "Adding b'X-Api-Key'=b'[redacted]' to the table",
        ),
        # plain-text header dumps
        (f"authorization: Bearer {TOKEN}\nhost: a", "authorization: [redacted]\nhost: a"),
        (f"x-api-key: {KEY}", "x-api-key: [redacted]"),
        # reprs: dicts, tuples, grpc's metadata items, a dataclass, JSON, protobuf text
        (
            f"Headers({{'host': 'h', 'authorization': 'Bearer {TOKEN}', 'x-api-key': '{KEY}'}})",
            "Headers({'host': 'h', 'authorization': '[redacted]', 'x-api-key': '[redacted]'})",
        ),
        (
            f"(('authorization', 'Bearer {TOKEN}'), ('x-api-key', '{KEY}'))",
            "(('authorization', '[redacted]'), ('x-api-key', '[redacted]'))",
        ),
        (
            "(_Metadatum(key='authorization', value='Bearer x'), "
            f"_Metadatum(key='x-api-key', value='{KEY}'))",
            "(_Metadatum(key='authorization', value='[redacted]'), "
            "_Metadatum(key='x-api-key', value='[redacted]'))",
        ),
        (f"Caller(token='x', api_key='{KEY}')", "Caller(token='[redacted]', api_key='[redacted]')"),
        (
            '{"seatToken": "x", "apiKey": "y"}',
            '{"seatToken": "[redacted]", "apiKey": "[redacted]"}',
        ),
        ('seats { seat: 1 token: "x" }', 'seats { seat: 1 token: "[redacted]" }'),
        # an escaped quote does not end the value early
        ("{'authorization': 'Bearer a\\'b'}", "{'authorization': '[redacted]'}"),
        # Bearer anywhere, and a seat token's shape anywhere
        (f"got Bearer {TOKEN} from x", "got Bearer [redacted] from x"),
        (f"/v1/games?t={TOKEN}&x=1", "/v1/games?t=[redacted]&x=1"),
    ],
)
def test_secrets_are_redacted_in_every_form_a_log_line_shows_them(text: str, expected: str) -> None:
    assert redacted(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        # the service's own messages name the header and its placeholder
        "this call needs a seat token: send 'authorization: Bearer <token>'",
        "the authorization header must be 'Bearer <seat token>' (or absent, for a spectator)",
        # 32 characters, but of one case: a trace id, a name
        "trace 0123456789abcdef0123456789abcdef",
        "in snake_case_identifier_of_32_ch",
        "game a8fc057fc30a410741d1 created: 2 players, standard, API key acme",
    ],
)
def test_what_is_not_a_secret_is_left_alone(text: str) -> None:
    assert redacted(text) == text


def test_configured_api_keys_are_redacted_wherever_they_appear() -> None:
    keys = plain_keys(f"acme:{KEY}, beta:sha256:{'0' * 64}")
    assert keys == (KEY,)
    assert redacted(f"odd place {KEY}!", *keys) == f"odd place {REDACTED}!"


def test_a_caller_is_safe_to_log() -> None:
    shown = repr(Caller(token=TOKEN, address="192.0.2.1", api_key=KEY))
    assert TOKEN not in shown
    assert KEY not in shown
    assert "192.0.2.1" in shown


def emit(form: str, logger: str, message: str, *args: object, **kwargs: object) -> str:
    """What the process's handler (service.ops.telemetry.log_handler) writes for one record."""
    out = io.StringIO()
    handler = log_handler(form, [KEY], stream=out)
    # A logger of no manager: no other handler (pytest's) sees its records.
    source = logging.Logger(logger, logging.DEBUG)
    source.addHandler(handler)
    source.debug(message, *args, **kwargs)  # type: ignore[arg-type]
    return out.getvalue()


@pytest.mark.parametrize("form", ["text", "json"])
def test_the_handler_redacts_arguments_and_tracebacks(form: str) -> None:
    line = emit(form, "args", "headers %s and %r", {"authorization": f"Bearer {TOKEN}"}, KEY)
    assert TOKEN not in line
    assert KEY not in line
    assert line.count(REDACTED) == 2
    try:
        raise ValueError(f"bad header authorization: Bearer {TOKEN}")
    except ValueError:
        line = emit(form, "error", "failed", exc_info=True)
    assert "ValueError: bad header authorization: [redacted]" in line.replace("\\n", "\n")
    assert TOKEN not in line
    # Arguments that do not fit the format: logged redacted, where logging's
    # own error path would print them raw.
    line = emit(form, "unformattable", "one %s %s", f"Bearer {TOKEN}")
    assert TOKEN not in line
    assert "one %s %s" in line
    if form == "json":
        assert json.loads(line)["level"] == "DEBUG"


def test_a_stack_and_a_formatted_traceback_are_redacted() -> None:
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "m", None, None)
    record.exc_text = f"Traceback ...\nKeyError: 'x-api-key: {KEY}'"
    record.stack_info = f"Stack:\n  f(token='{TOKEN}')"
    assert RedactSecrets().filter(record)
    assert KEY not in record.exc_text
    assert TOKEN not in record.stack_info


def test_hpack_header_blocks_are_logged_as_their_length() -> None:
    """hpack logs every header block it decodes, raw and at times
    Huffman-coded (where no pattern could find a secret): only its length shows."""
    block = b"\x00\rauthorization\x8f" + TOKEN.encode()
    line = emit("text", "hpack.hpack", "Decoding %s", block)
    assert f"Decoding <{len(block)} bytes>" in line
    assert "authorization" not in line


def test_library_loggers_are_sent_through_the_root_handler() -> None:
    own = logging.Logger("library")
    writer = logging.StreamHandler(io.StringIO())
    own.addHandler(writer)
    own.addHandler(logging.NullHandler())
    own.propagate = False
    silent = logging.Logger("silent")
    silent.propagate = False  # no handler of its own: its choice stays
    through_root([own, silent])
    assert writer not in own.handlers
    assert [type(h) for h in own.handlers] == [logging.NullHandler]
    assert own.propagate
    assert not silent.propagate


# ------------------------------------------------------------------ a real process


def c_core_lines(log: str) -> list[str]:
    """Lines of gRPC's C core (absl's format: ``I1202 14:51:25.420652  10784 file.cc:91] ...``)."""
    return [line for line in log.splitlines() if re.match(r"[IWEF]\d{4} \d\d:\d\d:\d\d\.", line)]


@pytest.mark.parametrize("form", ["text", "json"])
def test_a_debug_log_of_real_calls_holds_no_secret(
    tmp_path: Path, redis_url: str, form: str
) -> None:
    """``railyard serve`` at debug level, with an API key configured and
    GRPC_TRACE asking for every C-core trace: calls over both transports with
    seat tokens and the key (a bad token, a bad key, an illegal move among
    them) are logged at debug level, and no token or key is in the output."""
    bad_token = secrets.token_urlsafe(24)
    bad_key = "beta-key-" + secrets.token_hex(12)
    env = {
        "RAILYARD_LOG_LEVEL": "debug",
        "RAILYARD_LOG_FORMAT": form,
        "RAILYARD_API_KEYS": f"acme:{KEY}",
        "RAILYARD_BOT_PROCESSES": "0",
        "GRPC_TRACE": "all",
        "GRPC_VERBOSITY": "debug",
        "PYTHONASYNCIODEBUG": "1",
    }
    with serve(tmp_path, redis_url, f"secrets-{form}", **env) as server:

        async def calls() -> tuple[list[str], list[str]]:
            body = {"players": [{}, {}], "ruleset": {"rounds": 1}}
            async with httpx.AsyncClient(base_url=server.base_url, timeout=10) as http:
                created = await http.post("/v1/games", json=body, headers={"x-api-key": KEY})
                assert created.status_code == 200, created.text
                game_id = created.json()["game"]["gameId"]
                tokens = [s["token"] for s in created.json()["seats"]]
                both = {"x-api-key": KEY}
                for token in (*tokens, bad_token):
                    headers = {"authorization": f"Bearer {token}", **both}
                    await http.get(f"/v1/games/{game_id}", headers=headers)
                    await http.get(f"/v1/games/{game_id}/legal-moves", headers=headers)
                    move = {"play": {"tile": {"a": TILE.a, "b": TILE.b}, "train": {"seat": 0}}}
                    refused = await http.post(
                        f"/v1/games/{game_id}/moves", json={"move": move}, headers=headers
                    )
                    assert refused.status_code in (400, 403), refused.text
                bad = await http.post("/v1/games", json=body, headers={"x-api-key": bad_key})
                assert bad.status_code == 403
                assert (await http.get(f"/v1/games/{game_id}/log")).status_code == 200
            async with grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
                stub = pb_grpc.GameServiceStub(channel)
                made = await stub.CreateGame(
                    pb.CreateGameRequest(players=[pb.Player(), pb.Player()]),
                    metadata=(("x-api-key", KEY),),
                )
                seated = [(game_id, t) for t in tokens] + [
                    (made.game.game_id, s.token) for s in made.seats
                ]
                reasons = []
                for game, token in (*seated, (game_id, bad_token)):
                    metadata = (("authorization", f"Bearer {token}"), ("x-api-key", KEY))
                    play = pb.Move(play=pb.Move.Play(tile=TILE, train=pb.TrainRef(seat=0)))
                    try:
                        await stub.GetGame(pb.GetGameRequest(game_id=game), metadata=metadata)
                        await stub.ApplyMove(
                            pb.ApplyMoveRequest(game_id=game, move=play), metadata=metadata
                        )
                    except grpc.aio.AioRpcError as exc:
                        reasons.append(error_info(exc)[1])
                try:
                    await stub.CreateGame(
                        pb.CreateGameRequest(players=[pb.Player()]),
                        metadata=(("x-api-key", bad_key),),
                    )
                except grpc.aio.AioRpcError as exc:
                    reasons.append(error_info(exc)[1])
            # Every move refused (12-12 is in no hand), the bad token and key too.
            assert len(reasons) == 6, reasons
            assert {"BAD_SEAT_TOKEN", "BAD_API_KEY", "ILLEGAL_MOVE"} <= set(reasons), reasons
            tokens += [s.token for s in made.seats]
            return [game_id, made.game.game_id], tokens

        game_ids, tokens = asyncio.run(calls())
    log = server.log()
    lines = log.splitlines()
    assert len(tokens) == 4
    # The log proves something: debug level, our calls in it, uvicorn's and
    # grpc's lines through the same handler, GRPC_TRACE refused and obeyed.
    if form == "json":
        records = [json.loads(line) for line in lines]  # every line is ours: nothing bypassed it
        debug = [r["message"] for r in records if r["level"] == "DEBUG"]
        loggers = {r["logger"] for r in records}
    else:
        debug = [line for line in lines if " DEBUG " in line]
        loggers = {m[1] for line in lines if (m := re.match(r"\S+ \S+ \w+ ([\w.]+):", line))}
    for game_id in game_ids:
        assert sum(f"game {game_id}: a call from 127.0.0.1" in line for line in debug) >= 3, log
    assert any("CreateGame from 127.0.0.1 with an API key" in line for line in debug), log
    assert {"railyard", "uvicorn.error", "asyncio"} <= loggers, loggers
    assert any("GRPC_TRACE=all is ignored" in line for line in lines), log
    assert any("GRPC_VERBOSITY=debug is ignored" in line for line in lines), log
    assert not c_core_lines(log), c_core_lines(log)[:5]
    for secret in (*tokens, bad_token, KEY, bad_key):
        assert secret not in log, f"{secret} is in the log:\n{log}"
    print(f"{len(lines)} lines, {len(debug)} at debug", file=sys.stderr)
