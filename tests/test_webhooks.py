"""Signed webhooks (issue 25): service.app.webhooks against real receivers.

Every receiver here is a real HTTP server the test runs on a loopback port
(so ``webhook_allow_private`` is on wherever one is reached), and every
store a real one: the in-process store, and the harness's redis-server.
Time is a clock the tests move by hand (:class:`Clock`), and
:meth:`Webhooks.deliver_due` runs one round of the delivery task; a test
that waits for real time says why.

* every kind is delivered, signed: checked with :func:`verify` and with an
  HMAC computed here; the body is the documented envelope;
* a receiver answering 500 gets the event again, same id, same bytes, once
  the backoff has passed (not before); the backoff doubles up to an hour,
  with jitter; an event still failing 24 h on is dropped (log, metric);
* private, loopback, link-local (metadata) and CGNAT targets are refused at
  configuration when literal, and at delivery once a name is resolved
  (``localhost``; a name with one bad address among good ones); the
  connection goes to the address resolved and checked, TLS verified for
  the URL's name; redirects are not followed;
* a delivery whose consumer died is taken over; a hanging receiver holds
  only its tenant's share of the slots; a stopping replica hands back what
  it cut short; consumers gone for a day are forgotten; the queue works on
  a Redis Cluster, from a seed node that does not own its slot;
* across real processes: two ``railyard serve`` over one Redis, the replica
  holding in-flight deliveries to a hanging receiver is SIGKILLed, and every
  event arrives once the receiver is back (duplicates with their id).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import itertools
import json
import logging
import random
import re
import signal
import ssl
import textwrap
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.app.webhooks import KINDS, Webhooks, sign, verify
from service.app.webhooks.targets import parse_endpoints
from service.ops.telemetry import Metrics
from service.settings import Settings
from service.store import Store
from service.store.memory import MemoryStore
from service.store.redis import RedisStore
from service.store.resp import RespClient, key_slot
from tests.service_helpers import run

TENANT = "acme"
KEY = "acme-key-0123456789abcdef"
SECRET = "whsec_0123456789abcdefghij"
OTHER = "beta"
OTHER_KEY = "beta-key-0123456789abcdef"
OTHER_SECRET = "whsec_zyxwvutsrqponmlkjihg"
#: A Monday, 2026-11-30 12:00 UTC: where every test clock starts.
T0 = 1_796_040_000.0


class Clock:
    """Unix seconds that move only when a test moves them."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


# ------------------------------------------------------------------ a receiver


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    #: The status it was answered (0: not yet; a request held while the
    #: receiver hangs is answered 503 when it resumes).
    answered: int = 0

    @property
    def event(self) -> dict[str, Any]:
        decoded: dict[str, Any] = json.loads(self.body)
        return decoded


@dataclass
class Receiver:
    """A real HTTP server on a loopback port recording every request.

    ``statuses``: the answers to give, in order (then 200); ``hang``: while
    set, requests are held, unanswered, until :meth:`resume`, then answered
    503; ``redirect``: every request answered 302 to /elsewhere."""

    tls: ssl.SSLContext | None = None
    statuses: list[int] = field(default_factory=list)
    redirect: bool = False
    requests: list[Received] = field(default_factory=list)
    hang: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.server_address[1])

    def url(self, host: str = "127.0.0.1", path: str = "/hook") -> str:
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}{path}"

    def delivered(self) -> list[Received]:
        """The requests answered 2xx."""
        with self.lock:
            return [r for r in self.requests if 200 <= r.answered < 300]

    def wait_for(self, count: int, within: float = 30.0) -> None:
        """Until ``count`` requests have been answered 2xx."""
        deadline = time.monotonic() + within
        while len(self.delivered()) < count:
            assert time.monotonic() < deadline, f"{len(self.requests)} requests: {self.requests}"
            time.sleep(0.05)

    def resume(self) -> None:
        """Stop hanging: held requests and every later one are answered."""
        self.hang.clear()
        self.released.set()

    @contextlib.contextmanager
    def running(self) -> Iterator[Receiver]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                headers = {name.lower(): value for name, value in self.headers.items()}
                record = Received(self.path, headers, self.rfile.read(length))
                with receiver.lock:
                    receiver.requests.append(record)
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                if receiver.hang.is_set():
                    # Held until the receiver resumes, then refused: whatever
                    # it answers 2xx came after, to a sender still alive.
                    receiver.released.wait(120)
                    status = 503
                if receiver.redirect:
                    status = 302
                self.send_response(status)
                if status == 302:
                    self.send_header("location", "/elsewhere")
                self.send_header("content-length", "2")
                self.end_headers()
                try:
                    self.wfile.write(b"ok")
                    self.wfile.flush()
                except OSError:
                    return  # (its sender is gone)
                record.answered = status

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        if self.tls is not None:
            self.server.socket = self.tls.wrap_socket(self.server.socket, server_side=True)
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.released.set()
            self.server.shutdown()
            self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver().running() as running:
        yield running


def hook_settings(url: str, **more: Any) -> Settings:
    """One tenant, acme, whose webhook is ``url`` (private targets allowed
    unless ``more`` says otherwise)."""
    values: dict[str, Any] = {
        "api_keys": f"{TENANT}:{KEY},{OTHER}:{OTHER_KEY}",
        "webhooks": f"{TENANT} {url} {SECRET}",
        "webhook_allow_private": True,
        "webhook_timeout": 5,
        "webhook_claim_idle": 10,
        **more,
    }
    return Settings(**values)


def new_store(kind: str, url: str | None, clock: Clock) -> Store:
    if kind == "memory":
        return MemoryStore(clock=clock)
    assert url is not None
    return RedisStore(url)


def independent_signature_check(header: str, body: bytes, secret: str) -> int:
    """The signature checked as a receiver in another language would: the
    timestamp it carries."""
    fields = dict(part.split("=", 1) for part in header.split(","))
    expected = hmac.new(
        secret.encode(), fields["t"].encode() + b"." + body, hashlib.sha256
    ).hexdigest()
    assert hmac.compare_digest(fields["v1"], expected), header
    return int(fields["t"])


# ------------------------------------------------------------------ delivery


def test_every_kind_is_delivered_signed_with_the_documented_body(
    store_kind: str, url: str | None, receiver: Receiver
) -> None:
    clock = Clock()

    async def scenario() -> None:
        store = new_store(store_kind, url, clock)
        metrics = Metrics()
        hooks = Webhooks(store, hook_settings(receiver.url()), metrics, clock)
        assert hooks.enabled(TENANT)
        assert not hooks.enabled(None)
        assert not hooks.enabled(OTHER)  # a tenant without a webhook
        try:
            for n, kind in enumerate(sorted(KINDS)):
                await hooks.emit(TENANT, kind, f"game{n}", {"kind": kind, "scores": [n, 2]})
            # Games without a tenant, and tenants without a webhook: nothing queued.
            await hooks.emit(None, "game.created", "gameX", {})
            await hooks.emit(OTHER, "game.created", "gameY", {})
            with pytest.raises(ValueError, match="not a webhook event"):
                await hooks.emit(TENANT, "game.exploded", "gameZ", {})
            assert await store.webhook_backlog(TENANT) == len(KINDS)
            assert await store.webhook_backlog(OTHER) == 0
            clock.advance(3)
            # 4 at once to a tenant (webhook_tenant_concurrency): two rounds.
            assert await hooks.deliver_due() == 4
            assert await hooks.deliver_due() == len(KINDS) - 4
            assert await store.webhook_backlog(TENANT) == 0
            assert await hooks.deliver_due() == 0
            assert b'railyard_webhook_deliveries_total{outcome="delivered"} 6.0' in (
                metrics.exposition()
            )
            assert b"railyard_webhook_queued 0.0" in metrics.exposition()
        finally:
            await hooks.close()
            await store.close()

    run(scenario())
    assert len(receiver.requests) == len(KINDS)
    seen = set()
    # (Delivered 4 at once: in any order.)
    by_kind = {request.event["type"]: request for request in receiver.requests}
    for n, kind in enumerate(sorted(KINDS)):
        request = by_kind[kind]
        assert request.path == "/hook"
        assert request.headers["content-type"] == "application/json"
        assert request.headers["user-agent"].startswith("railyard-webhooks/")
        header = request.headers["railyard-signature"]
        assert verify(SECRET, header, request.body, now=clock.now)
        assert not verify(OTHER_SECRET, header, request.body, now=clock.now)
        assert independent_signature_check(header, request.body, SECRET) == int(T0 + 3)
        event = request.event
        assert event == {
            "id": request.headers["railyard-delivery"],
            "type": kind,
            "created": int(T0),
            "tenant": TENANT,
            "gameId": f"game{n}",
            "data": {"kind": kind, "scores": [n, 2]},
        }
        seen.add(event["id"])
    assert len(seen) == len(KINDS)  # one delivery id per event


def test_a_receiver_answering_500_gets_the_event_again_with_the_same_id(
    store_kind: str, url: str | None
) -> None:
    clock = Clock()
    with Receiver(statuses=[500, 503]).running() as receiver:

        async def scenario() -> None:
            store = new_store(store_kind, url, clock)
            metrics = Metrics()
            hooks = Webhooks(
                store, hook_settings(receiver.url()), metrics, clock, rng=random.Random(7)
            )
            try:
                await hooks.emit(TENANT, "game.finished", "g1", {"winners": [1]})
                assert await hooks.deliver_due() == 1  # 500
                assert await store.webhook_backlog(TENANT) == 1  # (a retry)
                assert await hooks.deliver_due() == 0  # not due yet
                clock.advance(10)  # the first retry: 7.5-10 s on
                assert await hooks.deliver_due() == 1  # 503
                clock.advance(14)
                assert await hooks.deliver_due() == 0  # the second: 15-20 s on
                clock.advance(6)
                assert await hooks.deliver_due() == 1  # 200
                assert await store.webhook_backlog(TENANT) == 0
                clock.advance(3600)
                assert await hooks.deliver_due() == 0
                text = metrics.exposition()
                assert b'railyard_webhook_deliveries_total{outcome="failed"} 2.0' in text
                assert b'railyard_webhook_deliveries_total{outcome="delivered"} 1.0' in text
            finally:
                await hooks.close()
                await store.close()

        run(scenario())
    assert [r.answered for r in receiver.requests] == [500, 503, 200]
    ids = {r.headers["railyard-delivery"] for r in receiver.requests}
    bodies = {r.body for r in receiver.requests}
    assert len(ids) == 1
    assert len(bodies) == 1
    # Each attempt signed when it was made: the timestamps move, the body does not.
    stamps = [
        independent_signature_check(r.headers["railyard-signature"], r.body, SECRET)
        for r in receiver.requests
    ]
    assert stamps == [int(T0), int(T0 + 10), int(T0 + 30)]


def test_the_backoff_doubles_from_10_s_to_an_hour_with_jitter() -> None:
    hooks = Webhooks(MemoryStore(), Settings(), rng=random.Random(1))
    for failures in range(1, 40):
        nominal = min(3600.0, 10.0 * 2 ** (failures - 1))
        delays = [hooks.backoff(failures) for _ in range(50)]
        assert all(0.75 * nominal <= d <= nominal for d in delays), (failures, delays)
        assert max(delays) - min(delays) > 0.1 * nominal  # jitter: not all alike


def test_each_retry_waits_its_backoff_by_the_injected_clock(
    store_kind: str, url: str | None
) -> None:
    """With a receiver that always fails, attempt n+1 comes only once the
    clock has moved by 75% of 10 s * 2^(n-1) (never before), and by then at
    the latest once it has moved by all of it."""
    clock = Clock()
    with Receiver(statuses=[500] * 100).running() as receiver:

        async def scenario() -> list[float]:
            store = new_store(store_kind, url, clock)
            hooks = Webhooks(store, hook_settings(receiver.url()), None, clock)
            waited = []
            try:
                await hooks.emit(TENANT, "seat.left", "g1", {"seat": 2})
                assert await hooks.deliver_due() == 1
                for failures in range(1, 10):
                    nominal = min(3600.0, 10.0 * 2 ** (failures - 1))
                    clock.advance(0.75 * nominal - 0.5)
                    assert await hooks.deliver_due() == 0, failures
                    moved = 0.75 * nominal - 0.5
                    while not await hooks.deliver_due():
                        clock.advance(nominal / 20)
                        moved += nominal / 20
                        assert moved <= nominal + nominal / 20, failures
                    waited.append(moved)
            finally:
                await hooks.close()
                await store.close()
            return waited

        waited = run(scenario())
    assert all(later > earlier for earlier, later in itertools.pairwise(waited))
    assert len(receiver.requests) == 10


def test_an_event_still_failing_24_hours_on_is_dropped(
    store_kind: str, url: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    with Receiver(statuses=[500] * 1000).running() as receiver:

        async def scenario() -> None:
            store = new_store(store_kind, url, clock)
            metrics = Metrics()
            hooks = Webhooks(store, hook_settings(receiver.url()), metrics, clock)
            try:
                await hooks.emit(TENANT, "round.ended", "g1", {"round": 3})
                last_attempt = clock.now
                while await store.webhook_backlog(TENANT):
                    if await hooks.deliver_due():
                        last_attempt = clock.now
                    clock.advance(60)
                    assert clock.now < T0 + 30 * 3600, "still retried after 30 h"
                # Retried for 24 h at least: the last attempt was the first at 24 h or past.
                assert T0 + 86400 <= last_attempt < T0 + 86400 + 3600 + 60
                text = metrics.exposition()
                assert b'railyard_webhook_deliveries_total{outcome="dropped"} 1.0' in text
            finally:
                await hooks.close()
                await store.close()

        with caplog.at_level(logging.WARNING, "railyard.webhooks"):
            run(scenario())
    attempts = len(receiver.requests)
    # 10 s doubling to an hour: 9 retries in the first 1.4 h, then hourly (75-100%).
    assert 30 <= attempts <= 40, attempts
    assert len({r.headers["railyard-delivery"] for r in receiver.requests}) == 1
    (line,) = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert f"of tenant {TENANT} dropped: {attempts} attempts over 24." in line
    assert "answered 500" in line


# ------------------------------------------------------------------ signatures


def test_verify_refuses_replays_tampering_and_other_secrets() -> None:
    body = b'{"id":"d1","type":"game.created"}'
    header = sign([SECRET], 1_700_000_000, body)
    assert verify(SECRET, header, body, now=1_700_000_000)
    assert verify(SECRET, header, body, 300, now=1_700_000_300)
    assert not verify(SECRET, header, body, 300, now=1_700_000_301)  # a replay, 5 min on
    assert not verify(SECRET, header, body, 300, now=1_699_999_699)  # from the future
    assert not verify(SECRET, header, body + b" ", now=1_700_000_000)
    assert not verify(OTHER_SECRET, header, body, now=1_700_000_000)
    # The timestamp is signed: moving it breaks the signature.
    moved = header.replace("t=1700000000", "t=1700000100")
    assert not verify(SECRET, moved, body, now=1_700_000_100)
    for broken in (
        "",
        "t=,v1=",
        "v1=" + "0" * 64,
        "t=1700000000",
        "t=x,v1=ab",
        "t=1700000000,v1=é",
    ):
        assert not verify(SECRET, broken, body, now=1_700_000_000)
    # While a secret is rotated, each one's signature is there: either verifies.
    both = sign([SECRET, OTHER_SECRET], 1_700_000_000, body)
    assert verify(SECRET, both, body, now=1_700_000_000)
    assert verify(OTHER_SECRET, both, body, now=1_700_000_000)


def test_the_receivers_snippet_in_the_operations_guide_verifies_like_verify() -> None:
    """docs/operations.md's Python snippet for receivers, run as written."""
    text = (Path(__file__).parents[1] / "docs" / "operations.md").read_text()
    section = text[text.index("* **Verifying.**") :]
    snippet = section[section.index("```python") + len("```python") : section.index("```\n", 10)]
    namespace: dict[str, Any] = {}
    exec(textwrap.dedent(snippet), namespace)
    documented = namespace["verify"]
    body = b'{"id":"d1"}'
    now = int(time.time())
    for header, good in [
        (sign([SECRET], now, body), True),
        (sign([OTHER_SECRET, SECRET], now - 200, body), True),
        (sign([SECRET], now - 400, body), False),
        (sign([OTHER_SECRET], now, body), False),
        (f"t={now},v1=é", False),
        ("", False),
    ]:
        assert documented(SECRET, header, body) is good, header
        assert verify(SECRET, header, body) is good, header
    assert documented(SECRET, sign([SECRET], now, body), body + b"\n") is False


def test_a_rotated_secret_signs_every_delivery_with_both(receiver: Receiver) -> None:
    clock = Clock()
    settings = hook_settings(
        receiver.url(),
        webhooks=f"{TENANT} {receiver.url()} {SECRET}\n{TENANT} {receiver.url()} {OTHER_SECRET}",
    )

    async def scenario() -> None:
        hooks = Webhooks(MemoryStore(clock=clock), settings, None, clock)
        await hooks.emit(TENANT, "game.started", "g1", {})
        assert await hooks.deliver_due() == 1
        await hooks.close()

    run(scenario())
    (request,) = receiver.requests
    for secret in (SECRET, OTHER_SECRET):
        assert verify(secret, request.headers["railyard-signature"], request.body, now=clock.now)


# ------------------------------------------------------------------ configuration


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("https://127.0.0.1/hook", "loopback"),
        ("https://[::1]:8443/hook", "loopback"),
        ("https://169.254.169.254/latest/meta-data", "link-local"),
        ("https://[fe80::1]/hook", "link-local"),
        ("https://10.0.0.7/hook", "private"),
        ("https://172.16.3.4/hook", "private"),
        ("https://192.168.1.1/hook", "private"),
        ("https://[fd12:3456::1]/hook", "private"),
        ("https://100.64.0.1/hook", "CGNAT"),
        ("https://0.0.0.0/hook", "unspecified"),
        ("https://224.0.0.1/hook", "multicast"),
        ("https://240.0.0.1/hook", "reserved"),
        ("https://192.0.2.10/hook", "not globally reachable"),  # TEST-NET-1
        ("https://[2002:a00:1::1]/hook", "private (6to4 10.0.0.1)"),
        ("https://[::ffff:127.0.0.1]/hook", "loopback (IPv4-mapped 127.0.0.1)"),
        ("https://[64:ff9b::a9fe:a9fe]/hook", "link-local (NAT64 169.254.169.254)"),
        ("http://hooks.example.com/hook", "https://"),
        ("https://user:pass@hooks.example.com/hook", "no user or password"),
        ("ftp://hooks.example.com/hook", "not an https:// URL"),
        ("https:///hook", "not an https:// URL"),
    ],
)
def test_a_webhook_to_a_private_or_plain_target_is_refused_at_configuration(
    url: str, says: str
) -> None:
    with pytest.raises(ValueError, match="webhook entry 1 \\(acme\\)") as refused:
        Settings(api_keys=f"{TENANT}:{KEY}", webhooks=f"{TENANT} {url} {SECRET}")
    assert says in str(refused.value)
    assert SECRET not in str(refused.value)
    # The operator may allow them (tests, a receiver on the same machine),
    # except what is no URL for a webhook at all.
    if says not in ("no user or password", "not an https:// URL"):
        allowed = Settings(
            api_keys=f"{TENANT}:{KEY}",
            webhooks=f"{TENANT} {url} {SECRET}",
            webhook_allow_private=True,
        )
        assert allowed.webhook_endpoints()[TENANT].url == url


def test_webhook_entries_are_checked_by_name(tmp_path: Path) -> None:
    keys = f"{TENANT}:{KEY},{OTHER}:{OTHER_KEY}"
    good = f"{TENANT} https://hooks.example.com/r {SECRET}"
    file = tmp_path / "webhooks"
    file.write_text(f"# beta's receiver\n{OTHER} https://beta.example.net/in {OTHER_SECRET}\n")
    settings = Settings(api_keys=keys, webhooks=good, webhooks_file=str(file))
    assert sorted(settings.webhook_endpoints()) == [TENANT, OTHER]
    # Secrets are redacted from every log line, like plain API keys.
    assert {SECRET, OTHER_SECRET, KEY} <= set(settings.log_secrets())
    for bad, says in [
        (f"{TENANT} https://hooks.example.com/r short", "at least 16 characters"),
        (f"{TENANT} https://hooks.example.com/r", "write <tenant> <url> <secret>"),
        (f"nobody https://hooks.example.com/r {SECRET}", "no API key of tenant 'nobody'"),
        (f"{good}\n{TENANT} https://other.example.com/r {OTHER_SECRET}", "another URL"),
    ]:
        with pytest.raises(ValueError, match=says) as refused:
            Settings(api_keys=keys, webhooks=bad)
        assert SECRET not in str(refused.value)
        assert OTHER_SECRET not in str(refused.value)
    with pytest.raises(ValueError, match="webhooks_file"):
        Settings(api_keys=keys, webhooks_file=str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="twice webhook_timeout"):
        Settings(webhook_timeout=10, webhook_claim_idle=15)
    assert repr(parse_endpoints(good, allow_private=False)).count(SECRET) == 0


# ------------------------------------------------------------------ where deliveries go


def test_a_name_resolving_to_a_private_address_is_refused_at_delivery(
    store_kind: str, url: str | None, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    """``localhost`` passes configuration (a name) and is refused once
    resolved: nothing reaches the receiver listening there. A name with one
    private address among public ones is refused too, before any connection."""
    clock = Clock()
    names = {"mixed.example": ["93.184.216.34", "169.254.169.254"]}
    resolved: list[str] = []

    async def resolver(host: str, port: int) -> list[str]:
        resolved.append(host)
        if host in names:
            return names[host]
        infos = await asyncio.get_running_loop().getaddrinfo(host, port)
        return list(dict.fromkeys(str(info[4][0]) for info in infos))

    async def scenario() -> None:
        store = new_store(store_kind, url, clock)
        metrics = Metrics()
        entries = (
            f"{TENANT} https://localhost:{receiver.port}/hook {SECRET},"
            f"{OTHER} https://mixed.example/hook {OTHER_SECRET}"
        )
        settings = hook_settings("", webhooks=entries, webhook_allow_private=False)
        hooks = Webhooks(store, settings, metrics, clock, resolver=resolver)
        try:
            await hooks.emit(TENANT, "game.created", "g1", {})
            await hooks.emit(OTHER, "game.created", "g2", {})
            assert await hooks.deliver_due() == 2
            text = metrics.exposition()
            assert b'railyard_webhook_deliveries_total{outcome="refused"} 2.0' in text
            # Refused like any failure: retried (the name's addresses may change).
            assert await store.webhook_backlog(TENANT) == 1
            assert await store.webhook_backlog(OTHER) == 1
        finally:
            await hooks.close()
            await store.close()

    with caplog.at_level(logging.INFO, "railyard.webhooks"):
        run(scenario())
    assert sorted(resolved) == ["localhost", "mixed.example"]
    assert receiver.requests == []
    lines = "\n".join(r.getMessage() for r in caplog.records)
    assert re.search(r"localhost resolves to (127\.0\.0\.1|::1): it is loopback", lines)
    assert "mixed.example resolves to 169.254.169.254: it is link-local" in lines


def make_certificates(where: Path, name: str) -> tuple[Path, Path, Path]:
    """A CA, and a server certificate for DNS:``name`` only (not an IP)."""
    from tests.test_tls import make_ca, make_leaf

    ca = make_ca(where, "webhook-ca")
    leaf = make_leaf(where, "receiver", ca, 7, [f"subjectAltName=DNS:{name}"])
    return ca.cert, leaf.cert, leaf.key


def test_https_goes_to_the_address_checked_and_verifies_the_name(tmp_path: Path) -> None:
    """The host name is resolved once, by the service, and the connection
    goes to that address: ``hooks.example`` resolves nowhere but through the
    test's resolver, so a delivery that arrives was connected to the address
    it returned. TLS is verified for the name (SNI and the certificate's
    name; the certificate has no IP), so the same address under another
    name, which the certificate does not name, fails."""
    ca, cert, key = make_certificates(tmp_path, "hooks.example")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    client_context = ssl.create_default_context(cafile=str(ca))
    clock = Clock()
    asked: list[str] = []

    async def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["127.0.0.1"]

    with Receiver(tls=context).running() as receiver:
        entries = (
            f"{TENANT} https://hooks.example:{receiver.port}/hook {SECRET},"
            f"{OTHER} https://impostor.example:{receiver.port}/hook {OTHER_SECRET}"
        )

        async def scenario() -> None:
            metrics = Metrics()
            settings = hook_settings("", webhooks=entries)
            hooks = Webhooks(
                MemoryStore(clock=clock),
                settings,
                metrics,
                clock,
                resolver=resolver,
                ssl_context=client_context,
            )
            await hooks.emit(TENANT, "game.created", "g1", {})
            await hooks.emit(OTHER, "game.created", "g2", {})
            assert await hooks.deliver_due() == 2
            text = metrics.exposition()
            assert b'railyard_webhook_deliveries_total{outcome="delivered"} 1.0' in text
            assert b'railyard_webhook_deliveries_total{outcome="failed"} 1.0' in text
            await hooks.close()

        run(scenario())
    (request,) = receiver.requests
    assert request.event["tenant"] == TENANT
    assert request.headers["host"] == f"hooks.example:{receiver.port}"
    assert sorted(asked) == ["hooks.example", "impostor.example"]


def test_a_redirect_is_not_followed(store_kind: str, url: str | None) -> None:
    clock = Clock()
    with Receiver(redirect=True).running() as receiver:

        async def scenario() -> None:
            store = new_store(store_kind, url, clock)
            metrics = Metrics()
            hooks = Webhooks(store, hook_settings(receiver.url()), metrics, clock)
            try:
                await hooks.emit(TENANT, "game.created", "g1", {})
                assert await hooks.deliver_due() == 1
                # A 3xx is no delivery: retried later, at the configured URL.
                text = metrics.exposition()
                assert b'railyard_webhook_deliveries_total{outcome="failed"} 1.0' in text
                assert await store.webhook_backlog(TENANT) == 1
            finally:
                await hooks.close()
                await store.close()

        run(scenario())
    assert [r.path for r in receiver.requests] == ["/hook"]


# ------------------------------------------------------------------ replicas and limits


def test_a_delivery_whose_consumer_died_is_taken_over(
    store_kind: str, url: str | None, receiver: Receiver
) -> None:
    """Consumer "dead" takes an event from the queue and never settles it
    (as a SIGKILLed replica); after the idle time another delivers it."""
    clock = Clock()

    async def scenario() -> None:
        store = new_store(store_kind, url, clock)
        # Redis measures a pending entry's idle time by its own clock: a
        # short idle time, and a real wait below.
        settings = hook_settings(receiver.url(), webhook_timeout=0.1, webhook_claim_idle=0.3)
        live = Webhooks(store, settings, None, clock, consumer="live")
        try:
            await live.emit(TENANT, "seat.joined", "g1", {"seat": 1})
            ((entry_id, _),) = await store.webhook_read(TENANT, "dead", 10)
            assert await live.deliver_due() == 0  # handed out, not idle long enough
            if store_kind == "memory":
                clock.advance(0.4)
            else:
                await asyncio.sleep(0.4)
            assert await live.deliver_due() == 1
            assert await store.webhook_backlog(TENANT) == 0
            # The dead consumer's late settling changes nothing.
            assert not await store.webhook_retry(TENANT, entry_id, "dead", b"{}", clock.now)
            assert await store.webhook_backlog(TENANT) == 0
        finally:
            await live.close()
            await store.close()

    run(scenario())
    assert [r.event["type"] for r in receiver.requests] == ["seat.joined"]


def test_the_queue_works_on_a_redis_cluster() -> None:
    """Every key of the webhooks shares the hash tag {webhooks}: on a
    three-node cluster, given a seed node that does not own that slot, each
    call and script reaches the node that does."""
    from tests.redis_harness import RedisCluster

    clock = Clock()
    with RedisCluster(masters=3) as cluster, Receiver(statuses=[500]).running() as receiver:
        keys = RedisStore(cluster.url).webhook_keys(TENANT)
        assert len({key_slot(key) for key in keys}) == 1
        owner = cluster.owner(key_slot(keys[0]))
        seed = cluster.nodes[(owner + 1) % 3].url

        async def scenario() -> None:
            store = RedisStore(seed)
            hooks = Webhooks(store, hook_settings(receiver.url()), None, clock)
            try:
                await hooks.emit(TENANT, "game.created", "g1", {})
                await hooks.emit(TENANT, "game.created", "g2", {})
                assert await hooks.deliver_due() == 2  # one 500, one 200
                clock.advance(10)
                assert await hooks.deliver_due() == 1
                assert await store.webhook_backlog(TENANT) == 0
                assert await store.webhook_forget(TENANT, 3600) == 0
                assert store._client.cluster  # (the seed answered MOVED)
            finally:
                await hooks.close()
                await store.close()

        run(scenario())
    assert len(receiver.delivered()) == 2


def test_consumers_gone_for_good_are_forgotten_unless_they_hold_entries(redis_url: str) -> None:
    """Every process run is a consumer of its own: one that holds nothing
    and has been silent for the idle time is deleted from the group; one
    holding an entry is kept (its entry is taken over, then it goes)."""

    async def scenario() -> None:
        store = RedisStore(redis_url)
        try:
            assert await store.webhook_forget(TENANT, 0.05) == 0  # (no queue yet)
            for n in range(3):
                await store.webhook_push(TENANT, b"entry %d" % n)
            for consumer in ("gone", "also-gone"):
                ((entry_id, _),) = await store.webhook_read(TENANT, consumer, 1)
                await store.webhook_done(TENANT, entry_id)
            assert await store.webhook_read(TENANT, "keeper", 1)  # and holds it
            # Redis times a consumer's silence by its own clock: a real wait.
            await asyncio.sleep(0.1)
            assert await store.webhook_forget(TENANT, 0.05) == 2
            assert await store.webhook_forget(TENANT, 0.05) == 0
            stream, _ = store.webhook_keys(TENANT)
            client = RespClient(redis_url)
            consumers = await client.call("XINFO", "CONSUMERS", stream, "deliver", route=stream)
            await client.close()
            assert [bytes(c[1]) for c in consumers] == [b"keeper"]
        finally:
            await store.close()

    run(scenario())


def test_a_hanging_receiver_holds_only_its_tenants_share(store_kind: str, url: str | None) -> None:
    """acme's receiver hangs; beta's answers. With 2 slots per tenant, acme's
    5 events take 2, and beta's 3 are delivered while those hang (a real
    timeout: deliveries run on real sockets)."""
    clock = Clock()
    with Receiver().running() as slow, Receiver().running() as fast:
        slow.hang.set()
        entries = f"{TENANT} {slow.url()} {SECRET},{OTHER} {fast.url()} {OTHER_SECRET}"
        settings = hook_settings(
            "",
            webhooks=entries,
            webhook_concurrency=6,
            webhook_tenant_concurrency=2,
            webhook_timeout=1.5,
            webhook_claim_idle=3,
        )

        async def scenario() -> None:
            store = new_store(store_kind, url, clock)
            hooks = Webhooks(store, settings, None, clock)
            try:
                for n in range(5):
                    await hooks.emit(TENANT, "game.created", f"a{n}", {})
                for n in range(3):
                    await hooks.emit(OTHER, "game.created", f"b{n}", {})
                begun = time.monotonic()
                round_one = asyncio.ensure_future(hooks.deliver_due())
                while len(fast.requests) < 2:
                    await asyncio.sleep(0.01)
                assert time.monotonic() - begun < 1.0  # before acme's timed out
                assert await round_one == 4  # 2 of acme's, 2 of beta's
                assert time.monotonic() - begun >= 1.5  # (acme's timed out)
                assert len(slow.requests) == 2
                assert await hooks.deliver_due() == 3  # 2 more of acme's, beta's last
            finally:
                await hooks.close()
                await store.close()

        run(scenario())
        assert len(fast.requests) == 3
        assert len(slow.requests) == 4


def test_stop_hands_back_a_delivery_cut_short(store_kind: str, url: str | None) -> None:
    """A replica stopping lets a delivery run ``grace`` seconds, then hands
    it back due at once: another replica sends it without waiting for the
    idle time (a real wait: the grace, on a real socket)."""
    clock = Clock()
    with Receiver().running() as receiver:
        receiver.hang.set()

        async def scenario() -> None:
            store = new_store(store_kind, url, clock)
            settings = hook_settings(receiver.url(), webhook_poll=0.05)
            first = Webhooks(store, settings, None, clock, consumer="first")
            second = Webhooks(store, settings, None, clock, consumer="second")
            try:
                first.start()
                await first.emit(TENANT, "game.finished", "g1", {"winners": [0]})
                while not receiver.requests:
                    await asyncio.sleep(0.01)
                await first.stop(grace=0.2)
                receiver.resume()
                assert await second.deliver_due() == 1
                assert await store.webhook_backlog(TENANT) == 0
            finally:
                await first.stop()
                await second.close()
                await store.close()

        run(scenario())
        receiver.wait_for(1)
        ids = {r.headers["railyard-delivery"] for r in receiver.requests}
        assert len(receiver.requests) == 2
        assert len(ids) == 1


# ------------------------------------------------------------------ real processes


def assert_delivering(server: Any) -> None:
    """The process runs a delivery task for the configured webhook."""
    assert "webhooks: 1 tenant(s), delivering as" in server.log(), (
        "no webhook delivery task: GameApp must hold "
        "Webhooks(self.store, self.settings, self.metrics)\n" + server.log()
    )


def create_game(base_url: str, key: str) -> str:
    response = httpx.post(
        f"{base_url}/v1/games",
        json={"players": [{"displayName": "Ana"}, {"displayName": "Ben"}]},
        headers={"x-api-key": key},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    game_id: str = response.json()["game"]["gameId"]
    return game_id


def consumers_holding(redis_url: str) -> dict[str, int]:
    """Each consumer holding entries of acme's queue, with their number."""

    async def ask() -> dict[str, int]:
        client = RespClient(redis_url)
        try:
            stream, _ = RedisStore(redis_url).webhook_keys(TENANT)
            reply = await client.call("XPENDING", stream, "deliver", route=stream)
        finally:
            await client.close()
        return {bytes(name).decode(): int(count) for name, count in (reply[3] or [])}

    return run(ask())


def test_a_sigkilled_replicas_deliveries_are_taken_over(tmp_path: Path, redis_url: str) -> None:
    """Two ``railyard serve`` on one Redis, acme's receiver hanging: five
    games created through replica A queue their ``game.created``; the
    replicas take them in flight (A at once, B at its next look; at most 3
    each). The replica holding more is SIGKILLed, the receiver comes back
    (refusing what it held), and the survivor delivers all five: its own
    after their backoff, the dead one's once idle for the claim time. Each
    game is told, with one delivery id whichever replica sent it, and
    however often."""
    from tests.test_service_resilience import serve

    with Receiver().running() as receiver:
        receiver.hang.set()
        env: dict[str, Any] = {
            "RAILYARD_API_KEYS": f"{TENANT}:{KEY}",
            "RAILYARD_WEBHOOKS": f"{TENANT} {receiver.url()} {SECRET}",
            "RAILYARD_WEBHOOK_ALLOW_PRIVATE": "true",
            # Attempts hang longer than the test takes to look and kill;
            # the claim time is the least allowed, twice that.
            "RAILYARD_WEBHOOK_TIMEOUT": "10",
            "RAILYARD_WEBHOOK_CLAIM_IDLE": "20",
            "RAILYARD_WEBHOOK_TENANT_CONCURRENCY": "3",
            "RAILYARD_WEBHOOK_POLL": "0.2",
            "RAILYARD_BOT_PROCESSES": "0",
        }
        with (
            serve(tmp_path, redis_url, "replica-a", **env) as a,
            serve(tmp_path, redis_url, "replica-b", **env) as b,
        ):
            assert_delivering(a)
            assert_delivering(b)
            games = [create_game(a.base_url, KEY) for _ in range(5)]
            deadline = time.monotonic() + 10
            while len(receiver.requests) < 5:  # all five in flight, hanging
                assert time.monotonic() < deadline, a.log() + b.log()
                time.sleep(0.05)
            held = consumers_holding(redis_url)
            assert sum(held.values()) == 5, held
            pids = {server.proc.pid: server for server in (a, b)}
            holder = max(held, key=held.__getitem__)
            victim = pids[int(holder.split(":")[1])]
            survivor = b if victim is a else a
            victim.proc.send_signal(signal.SIGKILL)
            victim.proc.wait(10)
            assert receiver.delivered() == []
            receiver.resume()
            receiver.wait_for(5, within=60)
            deadline = time.monotonic() + 10  # (each settles just after its answer)
            while consumers_holding(redis_url):
                assert time.monotonic() < deadline, consumers_holding(redis_url)
                time.sleep(0.05)
            took_over = re.findall(r"took over (\d+) deliveries", survivor.log())
            assert sum(map(int, took_over)) == held[holder], survivor.log()
            assert SECRET not in a.log() + b.log()
            assert receiver.url() not in a.log() + b.log()  # (httpx's request lines)
    delivered = receiver.delivered()
    assert sorted(r.event["gameId"] for r in delivered) == sorted(games)
    by_id: dict[str, set[bytes]] = {}
    for request in receiver.requests:
        event = request.event
        assert request.headers["railyard-delivery"] == event["id"]
        assert event["type"] == "game.created"
        assert event["tenant"] == TENANT
        independent_signature_check(request.headers["railyard-signature"], request.body, SECRET)
        by_id.setdefault(event["id"], set()).add(request.body)
    assert len(by_id) == 5  # one id per game, however many times it came
    assert all(len(bodies) == 1 for bodies in by_id.values())
    # Each came twice: to the hanging receiver, then delivered, with its id.
    assert len(receiver.requests) == 10


def test_a_memory_store_service_delivers_its_games_events(tmp_path: Path) -> None:
    """``railyard serve`` without Redis: the queue is in the process."""
    from tests.test_service_resilience import serve

    with Receiver().running() as receiver:
        env: dict[str, Any] = {
            "RAILYARD_API_KEYS": f"{TENANT}:{KEY}",
            "RAILYARD_WEBHOOKS": f"{TENANT} {receiver.url()} {SECRET}",
            "RAILYARD_WEBHOOK_ALLOW_PRIVATE": "true",
            "RAILYARD_BOT_PROCESSES": "0",
        }
        with serve(tmp_path, None, "memory", **env) as server:
            assert_delivering(server)
            game_id = create_game(server.base_url, KEY)
            receiver.wait_for(1)
            assert SECRET not in server.log()
    (request,) = receiver.requests
    assert request.event["gameId"] == game_id
    assert request.event["type"] == "game.created"
    assert verify(SECRET, request.headers["railyard-signature"], request.body)
