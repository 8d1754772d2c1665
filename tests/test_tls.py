"""TLS on both ports of a real ``railyard serve`` (``--tls-cert`` / ``--tls-key``,
``--tls-client-ca`` for mutual TLS), with certificates made here by the
``openssl`` command line: gRPC and HTTPS play with a client trusting the CA,
cleartext and clients trusting another CA are refused; with a client CA, a
client without a certificate it signed is refused on both ports; the settings
refuse half a TLS configuration before anything listens."""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from railyard_api import game_service_pb2 as pb
from railyard_api import game_service_pb2_grpc as pb_grpc
from service import cli
from tests.service_helpers import bearer, people, run
from tests.test_service_resilience import Serve, serve

RAILYARD = Path(sys.executable).with_name("railyard")
OPENSSL = shutil.which("openssl") or "/usr/bin/openssl"
#: Seconds a call may take on a loaded two-core machine (a refusal is an
#: error long before: the handshake fails, nothing waits out a deadline).
CALL_TIMEOUT = 20.0
#: What a refused TLS handshake looks like to httpx: the connection fails or
#: is closed under the request (TLS 1.3: the server checks the client's
#: certificate after the client already considers the handshake done). Not a
#: timeout: a refusal must be prompt.
REFUSED = (httpx.ConnectError, httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)


# ------------------------------------------------------------------ certificates


@dataclass(frozen=True)
class Pair:
    """A PEM certificate and its PEM private key."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class Certs:
    ca: Pair
    server: Pair  # for IP:127.0.0.1 and DNS:localhost, signed by ca
    client: Pair  # signed by ca
    other_ca: Pair  # unrelated to ca
    stranger: Pair  # a client certificate signed by other_ca


def _openssl(*args: str | Path) -> None:
    # Not one of the tools `make unit` installs; without it these tests
    # fail, naming it, rather than skip.
    assert Path(OPENSSL).exists(), (
        "the openssl command line makes these tests' certificates and is not installed "
        "(apt-get install openssl)"
    )
    done = subprocess.run(
        [OPENSSL, *map(str, args)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, f"openssl {' '.join(map(str, args))}:\n{done.stderr}"


def _new_key(*args: str | Path) -> tuple[str | Path, ...]:
    """``openssl req`` arguments for a new unencrypted P-256 key."""
    return ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", *args)


def make_ca(where: Path, name: str) -> Pair:
    pair = Pair(where / f"{name}.pem", where / f"{name}.key")
    _openssl(
        "req",
        "-x509",
        *_new_key("-keyout", pair.key, "-out", pair.cert),
        "-days",
        "2",
        "-subj",
        f"/CN=Railyard test {name}",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    )
    return pair


def make_leaf(where: Path, name: str, ca: Pair, serial: int, extensions: list[str]) -> Pair:
    pair = Pair(where / f"{name}.pem", where / f"{name}.key")
    csr, ext = where / f"{name}.csr", where / f"{name}.ext"
    _openssl("req", "-new", *_new_key("-keyout", pair.key, "-out", csr), "-subj", f"/CN={name}")
    ext.write_text(
        "\n".join(
            [
                "basicConstraints=critical,CA:FALSE",
                "keyUsage=critical,digitalSignature",
                "subjectKeyIdentifier=hash",
                "authorityKeyIdentifier=keyid,issuer",
                *extensions,
                "",
            ]
        )
    )
    _openssl(
        "x509",
        "-req",
        "-in",
        csr,
        "-CA",
        ca.cert,
        "-CAkey",
        ca.key,
        "-set_serial",
        str(serial),
        "-days",
        "2",
        "-extfile",
        ext,
        "-out",
        pair.cert,
    )
    return pair


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    where = tmp_path_factory.mktemp("certs")
    ca, other_ca = make_ca(where, "ca"), make_ca(where, "other-ca")
    client_use = ["extendedKeyUsage=clientAuth"]
    return Certs(
        ca=ca,
        server=make_leaf(
            where,
            "server",
            ca,
            1001,
            ["extendedKeyUsage=serverAuth", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        ),
        client=make_leaf(where, "client", ca, 1002, client_use),
        other_ca=other_ca,
        stranger=make_leaf(where, "stranger", other_ca, 2001, client_use),
    )


def https_context(trust: Pair, client: Pair | None = None) -> ssl.SSLContext:
    """A client context trusting ``trust`` only (and presenting ``client``)."""
    context = ssl.create_default_context(cafile=str(trust.cert))
    if client is not None:
        context.load_cert_chain(str(client.cert), str(client.key))
    return context


def grpc_credentials(trust: Pair, client: Pair | None = None) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(
        root_certificates=trust.cert.read_bytes(),
        private_key=client.key.read_bytes() if client else None,
        certificate_chain=client.cert.read_bytes() if client else None,
    )


# ------------------------------------------------------------------ the service


@pytest.fixture(scope="module")
def tls_server(certs: Certs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    """TLS, configured through the environment."""
    with serve(
        tmp_path_factory.mktemp("tls"),
        None,
        "tls",
        tls=https_context(certs.ca),
        RAILYARD_TLS_CERT=str(certs.server.cert),
        RAILYARD_TLS_KEY=str(certs.server.key),
    ) as server:
        yield server


@pytest.fixture(scope="module")
def mtls_server(certs: Certs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    """Mutual TLS, configured through the command line."""
    with serve(
        tmp_path_factory.mktemp("mtls"),
        None,
        "mtls",
        args=[
            "--tls-cert",
            str(certs.server.cert),
            "--tls-key",
            str(certs.server.key),
            "--tls-client-ca",
            str(certs.ca.cert),
        ],
        tls=https_context(certs.ca, certs.client),
    ) as server:
        yield server


# ------------------------------------------------------------------ clients


async def play_grpc(target: str, credentials: grpc.ChannelCredentials) -> str:
    """Over a TLS channel: CreateGame for two, GetGame as seat 0 (its hand)
    and as nobody (no hand), the health service; the game's id."""
    async with grpc.aio.secure_channel(target, credentials) as channel:
        stub = pb_grpc.GameServiceStub(channel)
        created = await stub.CreateGame(
            pb.CreateGameRequest(players=people(2), seed="tls"), timeout=CALL_TIMEOUT
        )
        game_id = created.game.game_id
        assert game_id
        tokens = {s.seat: s.token for s in created.seats}
        assert sorted(tokens) == [0, 1]
        view = await stub.GetGame(
            pb.GetGameRequest(game_id=game_id), metadata=bearer(tokens[0]), timeout=CALL_TIMEOUT
        )
        assert view.game_id == game_id
        assert view.version == created.game.version
        assert view.HasField("viewer_seat")
        assert view.viewer_seat == 0
        assert len(view.hand) > 0, "a seat's token shows its hand"
        anonymous = await stub.GetGame(pb.GetGameRequest(game_id=game_id), timeout=CALL_TIMEOUT)
        assert anonymous.game_id == game_id
        assert not anonymous.HasField("viewer_seat")
        assert len(anonymous.hand) == 0
        health = health_pb2_grpc.HealthStub(channel)
        reply = await health.Check(health_pb2.HealthCheckRequest(), timeout=CALL_TIMEOUT)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        return game_id


async def grpc_refused(target: str, credentials: grpc.ChannelCredentials | None) -> None:
    """A call over this channel fails UNAVAILABLE (the handshake), promptly."""
    async with (
        grpc.aio.insecure_channel(target)
        if credentials is None
        else grpc.aio.secure_channel(target, credentials)
    ) as channel:
        stub = pb_grpc.GameServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.CreateGame(
                pb.CreateGameRequest(players=people(2), seed="refused"), timeout=CALL_TIMEOUT
            )
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE, refused.value


def play_http(base_url: str, context: ssl.SSLContext) -> str:
    """Over HTTPS: POST /v1/games for two, GET it as seat 0 (its hand) and as
    nobody (no hand); the game's id."""
    with httpx.Client(base_url=base_url, verify=context, timeout=CALL_TIMEOUT) as client:
        players = [{"displayName": "Ana"}, {"displayName": "Ben"}]
        reply = client.post("/v1/games", json={"players": players, "seed": "tls"})
        assert reply.status_code == 200, reply.text
        body = reply.json()
        game_id: str = body["game"]["gameId"]
        tokens = {int(s.get("seat", 0)): s["token"] for s in body["seats"]}
        assert sorted(tokens) == [0, 1]
        reply = client.get(f"/v1/games/{game_id}", headers={"authorization": f"Bearer {tokens[0]}"})
        assert reply.status_code == 200, reply.text
        view: dict[str, Any] = reply.json()
        assert view["gameId"] == game_id
        assert view.get("version") == body["game"].get("version")
        assert view.get("viewerSeat", 0) == 0
        assert len(view["hand"]) > 0, "a seat's token shows its hand"
        anonymous = client.get(f"/v1/games/{game_id}")
        assert anonymous.status_code == 200, anonymous.text
        assert anonymous.json()["gameId"] == game_id
        assert "viewerSeat" not in anonymous.json()
        assert not anonymous.json().get("hand")
        return game_id


def http_refused(url: str, verify: ssl.SSLContext | bool) -> httpx.TransportError:
    """GET ``url`` fails in the connection (no response at all), promptly."""
    with pytest.raises(REFUSED) as refused:
        httpx.get(url, verify=verify, timeout=CALL_TIMEOUT)
    return refused.value


# ------------------------------------------------------------------ TLS


def test_grpc_over_tls_plays_and_refuses_cleartext_and_strangers(
    certs: Certs, tls_server: Serve
) -> None:
    async def go() -> str:
        game_id = await play_grpc(tls_server.target, grpc_credentials(certs.ca))
        # Cleartext HTTP/2 to the TLS port: no handshake, no call.
        await grpc_refused(tls_server.target, None)
        # A client trusting another CA does not accept the server's certificate.
        await grpc_refused(tls_server.target, grpc_credentials(certs.other_ca))
        return game_id

    game_id = run(go())
    # One service behind both ports: the game made over gRPC, read over HTTPS.
    reply = httpx.get(
        f"{tls_server.base_url}/v1/games/{game_id}",
        verify=https_context(certs.ca),
        timeout=CALL_TIMEOUT,
    )
    assert reply.status_code == 200, reply.text
    assert reply.json()["gameId"] == game_id
    assert tls_server.proc.poll() is None, tls_server.log()


def test_http_over_tls_plays_and_refuses_cleartext_and_strangers(
    certs: Certs, tls_server: Serve
) -> None:
    game_id = play_http(tls_server.base_url, https_context(certs.ca))
    # Cleartext HTTP to the TLS port: the server hangs up, nothing answers.
    http_refused(f"http://127.0.0.1:{tls_server.http_port}/v1/games/{game_id}", verify=False)
    # A client trusting another CA fails verifying the server's certificate.
    strange = http_refused(
        f"{tls_server.base_url}/v1/games/{game_id}", verify=https_context(certs.other_ca)
    )
    assert isinstance(strange, httpx.ConnectError)
    assert "CERTIFICATE_VERIFY_FAILED" in str(strange)

    async def over_grpc() -> None:
        async with grpc.aio.secure_channel(
            tls_server.target, grpc_credentials(certs.ca)
        ) as channel:
            view = await pb_grpc.GameServiceStub(channel).GetGame(
                pb.GetGameRequest(game_id=game_id), timeout=CALL_TIMEOUT
            )
            assert view.game_id == game_id

    # The game made over HTTPS, read over gRPC.
    run(over_grpc())
    assert tls_server.proc.poll() is None, tls_server.log()


def test_the_line_that_says_where_to_go_names_https(tls_server: Serve) -> None:
    web = f"https://127.0.0.1:{tls_server.http_port}"
    line = (
        f"ready: the table at {web}/, the API docs at {web}/docs, "
        f"gRPC (TLS) on 127.0.0.1:{tls_server.grpc_port}"
    )
    deadline = time.monotonic() + 30  # (/readyz may answer just before it is logged)
    while line not in tls_server.log():
        assert time.monotonic() < deadline, tls_server.log()
        time.sleep(0.05)


# ------------------------------------------------------------------ mutual TLS


@pytest.mark.parametrize("who", ["anonymous", "stranger"])
def test_mutual_tls_refuses_clients_without_a_certificate_the_ca_signed(
    certs: Certs, mtls_server: Serve, who: str
) -> None:
    """No client certificate, or one signed by an unrelated CA: both ports
    refuse in the handshake (the client itself trusts the server)."""
    client = None if who == "anonymous" else certs.stranger
    run(grpc_refused(mtls_server.target, grpc_credentials(certs.ca, client)))
    http_refused(f"{mtls_server.base_url}/readyz", verify=https_context(certs.ca, client))
    # Over TLS 1.2 the server checks the certificate inside the handshake:
    # the connection itself fails (where TLS 1.3 fails the first read).
    tls12 = https_context(certs.ca, client)
    tls12.maximum_version = ssl.TLSVersion.TLSv1_2
    assert isinstance(
        http_refused(f"{mtls_server.base_url}/readyz", verify=tls12), httpx.ConnectError
    )
    with (
        httpx.Client(
            base_url=mtls_server.base_url,
            verify=https_context(certs.ca, client),
            timeout=CALL_TIMEOUT,
        ) as refused,
        pytest.raises(REFUSED),
    ):
        refused.post("/v1/games", json={"players": [{"displayName": "A"}, {"displayName": "B"}]})
    # Still serving the clients it should.
    reply = httpx.get(
        f"{mtls_server.base_url}/readyz",
        verify=https_context(certs.ca, certs.client),
        timeout=CALL_TIMEOUT,
    )
    assert reply.status_code == 200
    assert mtls_server.proc.poll() is None, mtls_server.log()


def test_mutual_tls_serves_clients_with_a_certificate_the_ca_signed(
    certs: Certs, mtls_server: Serve
) -> None:
    run(play_grpc(mtls_server.target, grpc_credentials(certs.ca, certs.client)))
    play_http(mtls_server.base_url, https_context(certs.ca, certs.client))
    tls12 = https_context(certs.ca, certs.client)
    tls12.maximum_version = ssl.TLSVersion.TLSv1_2
    reply = httpx.get(f"{mtls_server.base_url}/readyz", verify=tls12, timeout=CALL_TIMEOUT)
    assert reply.status_code == 200
    # Mutual TLS is still TLS: cleartext is refused on both ports.
    run(grpc_refused(mtls_server.target, None))
    http_refused(f"http://127.0.0.1:{mtls_server.http_port}/readyz", verify=False)


# ------------------------------------------------------------------ settings


@pytest.fixture
def no_serving(monkeypatch: pytest.MonkeyPatch) -> None:
    """No RAILYARD_* from the environment, and a failure (not a server
    listening on the default ports) should the settings let one through."""
    for name in list(os.environ):
        if name.startswith("RAILYARD_") or name == "REDIS_URL":
            monkeypatch.delenv(name)

    async def serve(*_: object, **__: object) -> None:
        raise AssertionError("the settings were accepted: railyard serve started")

    monkeypatch.setattr("service.ops.serve.serve", serve)


@pytest.mark.parametrize(
    ("given", "named"),
    [
        pytest.param(["cert"], "tls_cert and tls_key go together", id="cert-without-key"),
        pytest.param(["key"], "tls_cert and tls_key go together", id="key-without-cert"),
        pytest.param(["ca"], "tls_client_ca (mutual TLS) needs tls_cert", id="ca-without-cert"),
        pytest.param(["cert", "key", "missing-ca"], "tls_client_ca: ", id="unreadable-client-ca"),
        pytest.param(["missing-cert", "key"], "tls_cert: ", id="unreadable-cert"),
        pytest.param(["dir-cert", "key"], "tls_cert: ", id="directory-cert"),
        # Readable files that are not what they should be: refused before
        # anything listens (not "gRPC cannot listen on ...", exit 1).
        pytest.param(["junk-cert", "key"], "tls_cert / tls_key: ", id="not-pem-cert"),
        pytest.param(["cert", "junk-key"], "tls_cert / tls_key: ", id="not-pem-key"),
        pytest.param(["cert", "other-key"], "KEY_VALUES_MISMATCH", id="key-of-another-cert"),
        pytest.param(["cert", "sealed-key"], "tls_cert / tls_key: ", id="encrypted-key"),
        pytest.param(["cert", "key", "junk-ca"], "holds no PEM CA certificate", id="not-pem-ca"),
        pytest.param(["cert", "key", "key-as-ca"], "holds no PEM CA certificate", id="key-as-ca"),
    ],
)
def test_serve_refuses_an_incomplete_tls_configuration(
    certs: Certs,
    no_serving: None,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    given: list[str],
    named: str,
) -> None:
    missing = tmp_path / "nowhere.pem"
    junk = tmp_path / "junk.pem"
    junk.write_text("not PEM at all\n")
    sealed = tmp_path / "sealed.key"
    _openssl("pkey", "-in", certs.server.key, "-aes128", "-passout", "pass:secret", "-out", sealed)
    flags = {
        "cert": ["--tls-cert", str(certs.server.cert)],
        "key": ["--tls-key", str(certs.server.key)],
        "ca": ["--tls-client-ca", str(certs.ca.cert)],
        "missing-cert": ["--tls-cert", str(missing)],
        "missing-ca": ["--tls-client-ca", str(missing)],
        "dir-cert": ["--tls-cert", str(tmp_path)],
        "junk-cert": ["--tls-cert", str(junk)],
        "junk-key": ["--tls-key", str(junk)],
        "other-key": ["--tls-key", str(certs.client.key)],
        "sealed-key": ["--tls-key", str(sealed)],
        "junk-ca": ["--tls-client-ca", str(junk)],
        "key-as-ca": ["--tls-client-ca", str(certs.ca.key)],
    }
    argv = ["serve", "--grpc-port", "0", "--http-port", "0"]
    for flag in given:
        argv += flags[flag]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("railyard serve: bad setting:"), err
    assert named in err, err
    if "missing" in " ".join(given):
        assert f"{str(missing)!r} is not a readable file" in err, err
    if "dir-cert" in given:
        assert f"{str(tmp_path)!r} is not a readable file" in err, err


def test_serve_refuses_a_tls_cert_without_key_from_the_environment(
    certs: Certs, tmp_path: Path
) -> None:
    environment = {
        **{
            k: v
            for k, v in os.environ.items()
            if not k.startswith("RAILYARD_") and k != "REDIS_URL"
        },
        "RAILYARD_TLS_CERT": str(certs.server.cert),
    }
    done = subprocess.run(
        [str(RAILYARD), "serve", "--host", "127.0.0.1", "--grpc-port", "0", "--http-port", "0"],
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "railyard serve: bad setting:" in done.stderr
    assert "tls_cert and tls_key go together" in done.stderr
