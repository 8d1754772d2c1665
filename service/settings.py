"""Settings of ``railyard serve``, validated at start-up (flags override env)."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Literal

from pydantic import AliasChoices, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

if TYPE_CHECKING:
    from service.app.tenants import ApiKeys
    from service.app.webhooks.targets import Endpoint

# service.app's modules are imported where they are used below: the
# application layer reads these settings, so importing it here would be
# circular.


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAILYARD_", extra="ignore")

    #: Listen address. Loopback by default: `railyard serve` with the
    #: in-process store is for trying it out on one machine; the image and
    #: the manifests set 0.0.0.0.
    host: str = "127.0.0.1"
    grpc_port: int = Field(50051, ge=0, le=65535)
    http_port: int = Field(8080, ge=0, le=65535)
    #: Redis URL; empty: the in-process memory store (one machine, for trying it out).
    redis_url: str = Field("", validation_alias=AliasChoices("REDIS_URL", "RAILYARD_REDIS_URL"))
    #: Seconds a game lives after its last change.
    game_ttl: float = Field(7 * 86400, gt=0)
    #: Seconds a request id's answer is remembered.
    request_ttl: float = Field(86400, gt=0)
    #: Seeds chosen by CreateGame's caller: "allow" (the game's view says
    #: seedFromCaller) or "deny" (refused: INVALID_ARGUMENT). A caller's seed
    #: lets its chooser compute every hand (MT-FAIR-1, API.md).
    caller_seeds: Literal["allow", "deny"] = "allow"
    #: Requests per second allowed per caller (a verified seat, else the
    #: client's address); 0 = no limit.
    rate_limit: float = Field(0, ge=0)
    rate_burst: int = Field(50, ge=1)
    #: Where the callers' buckets live: "replica" (in each process: N replicas
    #: allow N times the rate) or "store" (in Redis: one limit for all).
    rate_limit_scope: Literal["replica", "store"] = "replica"
    #: Proxies whose Forwarded / X-Forwarded-For headers name the client
    #: (comma-separated addresses or networks, ``*`` for any); empty: none,
    #: the connection's peer is the client.
    trusted_proxies: str = ""
    #: Open WatchGame streams per process, both transports together; one more
    #: is refused before it starts (RESOURCE_EXHAUSTED TOO_MANY_WATCHERS, HTTP
    #: 429 with Retry-After). Watchers cost Redis nothing per stream now (one
    #: subscriber connection per process); each costs the process tens of KiB
    #: (measured with bench/watchers.py: docs/performance.md), a socket, and a
    #: store read per keep-alive period. 2,000 fit the 512 MiB, one-CPU
    #: replica of deploy/k8s with room for its requests, under a 4,096
    #: open-files limit; lower it where the limit is 1,024.
    max_watchers: int = Field(2000, ge=1)
    #: Reads of a game's whole history from the store running at once in this
    #: process (GetGameLog, and a WatchGame's replay from an early version);
    #: one more is refused before it reads (RESOURCE_EXHAUSTED
    #: TOO_MANY_LOG_READS, HTTP 429 with Retry-After). Each reads every event
    #: of its game in one store reply; a finished game's log is kept by the
    #: process (service.app.history), and a call answered from it reads nothing.
    max_log_reads: int = Field(32, ge=1)
    #: Seconds between SSE keep-alive comments (API.md: at most 15).
    keepalive: float = Field(15, gt=0, le=15)
    #: Worker processes for bot play that does not fit a short slice of the
    #: event loop (unset: one per CPU; 0: a thread of this process).
    bot_processes: int | None = Field(None, ge=0)
    #: Seconds of CPU the bot turns of one request may take (a game of bots
    #: only is played whole by CreateGame); past it the request is refused.
    bot_cpu_limit: float = Field(10.0, gt=0)
    #: Where a game of bots only is played: "background" (CreateGame answers
    #: at version 0 and the replicas play it at the bots' full strength, its
    #: moves live through WatchGame) or "request" (API.md's Bots section:
    #: played to its end inside CreateGame, its experts at a cut budget).
    bots_only: Literal["background", "request"] = "background"
    #: Seconds a replica holds a claimed background game (renewed while it
    #: plays): how long a killed replica's games wait for another.
    background_lease: float = Field(10.0, gt=0)
    #: Seconds between two looks for due work (bots-only games, timers).
    background_poll: float = Field(0.25, gt=0)
    #: Background games one replica plays at once.
    background_games: int = Field(8, ge=1)
    #: Bot moves per background commit (each commit is one WatchGame version
    #: and one store round trip).
    background_moves: int = Field(1, ge=1)
    #: Processes serving the same ports (SO_REUSEPORT), each a whole replica
    #: over the store (service.ops.workers). Unset: one per CPU with Redis, one
    #: with the in-process store (which refuses more: its games are one
    #: process's).
    workers: int | None = Field(None, ge=1)
    log_level: str = "info"
    #: "text" for people, "json" (one object per line) for log pipelines.
    log_format: Literal["text", "json"] = "text"
    #: Web origins whose pages may call the HTTP API from a browser (CORS):
    #: comma-separated (``https://play.example.com,http://localhost:5173``),
    #: ``*`` for any; empty: none, the browser's same-origin rule applies.
    cors_origins: str = ""

    # Limits: what one replica holds for its clients, so that slow, silent or
    # oversized clients cannot use up its descriptors or memory (docs/operations.md "Limits").
    #: HTTP connections open at once; one more is answered 503 and closed.
    max_connections: int = Field(1000, ge=1)
    #: gRPC connections open at once (grpc.max_allowed_incoming_connections):
    #: one more is closed by gRPC as soon as it is accepted.
    grpc_max_connections: int = Field(1000, ge=1)
    #: Bytes of an HTTP request head (request line and header fields), and of
    #: a gRPC call's metadata; over it: 431 (gRPC: RESOURCE_EXHAUSTED).
    max_header_bytes: int = Field(16 * 1024, ge=1024)
    #: Header fields in one HTTP request head; over it: 431.
    max_headers: int = Field(100, ge=1)
    #: Seconds from a connection's start (or its previous response's end) until
    #: the request head is complete; also gRPC's HTTP/2 handshake timeout.
    header_timeout: float = Field(10, gt=0)
    #: Seconds to receive a request's whole body once its head is in. Real
    #: bodies are under a kilobyte (one packet); 10 s still lets a body of
    #: the largest size through at 100 KiB/s.
    body_timeout: float = Field(10, gt=0)
    #: Seconds an HTTP keep-alive connection may wait for its next request
    #: (uvicorn's timeout_keep_alive, whole seconds).
    idle_timeout: int = Field(5, ge=1)
    #: Seconds a gRPC connection with no call open is kept (grpc.max_connection_idle_ms;
    #: the client reconnects by itself on its next call).
    grpc_idle_timeout: float = Field(60, gt=0)
    #: Streams one gRPC connection may open at once (grpc.max_concurrent_streams,
    #: HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS): one more waits or is refused.
    #: A client holding more watches opens more connections. Each open stream
    #: holds tens of KiB in grpc's core: half-open streams on every allowed
    #: connection must fit the replica's memory.
    grpc_max_streams: int = Field(16, ge=1)
    #: Seconds a gRPC connection lives (grpc.max_connection_age_ms) before
    #: the server ends it with GOAWAY; its calls then have
    #: ``grpc_connection_age_grace`` seconds to finish (a watch resumes on a new
    #: connection from its last version).
    grpc_max_connection_age: float = Field(3600, gt=0)
    grpc_connection_age_grace: float = Field(60, ge=0)
    #: Bytes of a request body (HTTP) or message (gRPC's max_receive_message_length):
    #: a real one is under a kilobyte, and an unbounded read would let one
    #: client fill the replica's memory.
    max_body_bytes: int = Field(1 << 20, ge=1024)

    # TLS on both ports (none: cleartext, for a proxy or mesh that terminates it).
    #: PEM certificate chain and its private key.
    tls_cert: str = ""
    tls_key: str = ""
    #: PEM CA certificates: with it, mutual TLS (a client must present a
    #: certificate signed by one of them, on both ports).
    tls_client_ca: str = ""

    # Tenants (service.app.tenants, docs/operations.md "Tenants and API keys"): with any key
    # configured, CreateGame needs one; none keeps the open embedded default.
    #: API keys, ``name:key`` or ``name:sha256:<hex>``, comma- or line-separated.
    api_keys: str = ""
    #: A file of more such entries, one a line (``#`` comments): a mounted secret.
    api_keys_file: str = ""
    #: CreateGames per second per tenant, shared by every replica (through the
    #: store); 0 = no limit.
    tenant_create_rate: float = Field(5, ge=0)
    tenant_create_burst: int = Field(20, ge=1)
    #: Games in progress per tenant (created with its keys, not yet finished
    #: nor expired), counted in the store for every replica; 0 = no cap.
    tenant_max_live_games: int = Field(1000, ge=0)

    # Webhooks (service.app.webhooks, docs/operations.md "Webhooks"): events of
    # a tenant's games POSTed, signed, to the URL its operator configured.
    #: Entries ``<tenant> <url> <secret>``, comma- or line-separated.
    webhooks: str = ""
    #: A file of more such entries, one a line (``#`` comments): a mounted secret.
    webhooks_file: str = ""
    #: Let webhooks reach loopback, private, link-local (cloud metadata) and
    #: other addresses that are not globally reachable, and use http://: for
    #: tests and local receivers only (server-side request forgery otherwise).
    webhook_allow_private: bool = False
    #: Seconds one delivery attempt may take in all (resolving, connecting,
    #: sending, the receiver's answer); over it the attempt failed.
    webhook_timeout: float = Field(10, gt=0)
    #: Deliveries one replica makes at once, all tenants together ...
    webhook_concurrency: int = Field(16, ge=1)
    #: ... and to one tenant: a slow or dead receiver holds no more than these.
    webhook_tenant_concurrency: int = Field(4, ge=1)
    #: Seconds after its event that a failing delivery is still retried; the
    #: first failure at or past it drops the event (logged and counted).
    webhook_retry_for: float = Field(86400, gt=0)
    #: Seconds before the first retry, doubling with each failure up to
    #: ``webhook_backoff_max`` (each delay 75-100% of that: jitter).
    webhook_backoff: float = Field(10, gt=0)
    webhook_backoff_max: float = Field(3600, gt=0)
    #: Seconds a delivery handed to a replica may stay unsettled before
    #: another replica takes it over (the first one died): at least twice
    #: ``webhook_timeout``, so that a live replica's attempt is never taken.
    webhook_claim_idle: float = Field(60, gt=0)
    #: Seconds between two looks at the queues for events queued by other
    #: replicas and retries come due (an event queued here starts at once).
    webhook_poll: float = Field(1.0, gt=0)

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies(cls, value: str) -> str:
        from service.app.identity import TrustedProxies

        TrustedProxies.parse(value)  # raises ValueError naming the bad entry
        return value

    @model_validator(mode="after")
    def _tls(self) -> Settings:
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ValueError("tls_cert and tls_key go together: give both, or neither")
        if self.tls_client_ca and not self.tls_cert:
            raise ValueError("tls_client_ca (mutual TLS) needs tls_cert and tls_key")
        for name in ("tls_cert", "tls_key", "tls_client_ca"):
            path = getattr(self, name)
            if path and not (os.path.isfile(path) and os.access(path, os.R_OK)):
                raise ValueError(f"{name}: {path!r} is not a readable file")
        if not self.tls_cert:
            return self
        # What both servers will load, loaded now: a file that is not PEM, a
        # key that is not the certificate's (or is encrypted: neither server
        # takes a passphrase) is a bad setting, not a gRPC port that "cannot
        # listen" once the HTTP one is bound.
        import ssl

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        try:
            context.load_cert_chain(self.tls_cert, self.tls_key, password=lambda: b"")
        except ssl.SSLError as exc:
            raise ValueError(
                f"tls_cert / tls_key: {self.tls_cert!r} and {self.tls_key!r} are not a PEM "
                f"certificate chain and its unencrypted PEM private key ({exc})"
            ) from None
        if self.tls_client_ca:
            try:
                context.load_verify_locations(cafile=self.tls_client_ca)
            except ssl.SSLError as exc:
                raise ValueError(
                    f"tls_client_ca: {self.tls_client_ca!r} holds no PEM CA certificate ({exc})"
                ) from None
        return self

    @model_validator(mode="after")
    def _keys(self) -> Settings:
        try:
            self.api_key_set()  # raises ValueError naming the bad entry
        except OSError as exc:
            raise ValueError(f"api_keys_file: {exc}") from exc
        return self

    @model_validator(mode="after")
    def _webhooks(self) -> Settings:
        try:
            endpoints = self.webhook_endpoints()  # raises ValueError naming the bad entry
        except OSError as exc:
            raise ValueError(f"webhooks_file: {exc}") from exc
        if self.webhook_claim_idle < 2 * self.webhook_timeout:
            raise ValueError(
                f"webhook_claim_idle ({self.webhook_claim_idle:g} s) must be at least twice "
                f"webhook_timeout ({self.webhook_timeout:g} s): a replica's delivery still "
                "under way would be taken over by another"
            )
        if self.webhook_backoff_max < self.webhook_backoff:
            raise ValueError("webhook_backoff_max must be at least webhook_backoff")
        keys = self.api_key_set()
        tenants = {name for name, _ in keys.entries}
        for tenant in endpoints:
            if tenant not in tenants:
                raise ValueError(
                    f"webhooks: no API key of tenant {tenant!r} is configured (only games "
                    "created with a tenant's key have webhooks)"
                )
        return self

    def webhook_endpoints(self) -> dict[str, Endpoint]:
        """Each tenant's webhook (``webhooks`` and ``webhooks_file`` together)."""
        from service.app.webhooks.targets import load_endpoints

        return load_endpoints(
            self.webhooks, self.webhooks_file, allow_private=self.webhook_allow_private
        )

    def log_secrets(self) -> tuple[str, ...]:
        """What the log redacts wherever it appears (service.ops.redaction):
        the API keys configured as themselves, and the webhooks' secrets."""
        from service.app.webhooks.targets import secrets_of

        try:
            webhook_secrets = secrets_of(self.webhooks, self.webhooks_file)
        except OSError:  # (refused at validation already; nothing to add)
            webhook_secrets = ()
        return self.plain_api_keys() + webhook_secrets

    def api_key_set(self) -> ApiKeys:
        """The configured API keys (``api_keys`` and ``api_keys_file`` together)."""
        from service.app.tenants import ApiKeys

        return ApiKeys.load(self.api_keys, self.api_keys_file)

    def plain_api_keys(self) -> tuple[str, ...]:
        """The configured API keys given as themselves, for the log to redact."""
        from service.app.tenants import plain_keys

        return plain_keys(self.api_keys, self.api_keys_file)

    @field_validator("cors_origins")
    @classmethod
    def _origins(cls, value: str) -> str:
        for origin in cors_origin_list(value):
            if origin != "*" and not re.fullmatch(r"https?://[^/\s]+", origin):
                raise ValueError(
                    f"{origin!r} is not an origin: scheme://host[:port], no path (or *)"
                )
        return value


def cors_origin_list(value: str) -> list[str]:
    return [o.strip().rstrip("/") for o in value.split(",") if o.strip()]
