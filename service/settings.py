"""Settings of ``railyard serve``, validated at start-up (flags override env)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from service.identity import TrustedProxies


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAILYARD_", extra="ignore")

    host: str = "0.0.0.0"
    grpc_port: int = Field(50051, ge=0, le=65535)
    http_port: int = Field(8080, ge=0, le=65535)
    #: Redis URL; empty: the in-process memory store (one machine, for trying it out).
    redis_url: str = Field("", validation_alias=AliasChoices("REDIS_URL", "RAILYARD_REDIS_URL"))
    #: Seconds a game lives after its last change.
    game_ttl: float = Field(7 * 86400, gt=0)
    #: Seconds a request id's answer is remembered.
    request_ttl: float = Field(86400, gt=0)
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
    #: Seconds between SSE keep-alive comments (API.md: at most 15).
    keepalive: float = Field(15, gt=0, le=15)
    #: Worker processes for expert bot decisions (unset: one per CPU; 0: none,
    #: every bot decides on the event loop).
    bot_processes: int | None = Field(None, ge=0)
    #: Seconds of CPU the bot turns of one request may take (a game of bots
    #: only is played whole by CreateGame); past it the request is refused.
    bot_cpu_limit: float = Field(10.0, gt=0)
    log_level: str = "info"
    #: "text" for people, "json" (one object per line) for log pipelines.
    log_format: Literal["text", "json"] = "text"
    #: Web origins whose pages may call the HTTP API from a browser (CORS):
    #: comma-separated (``https://play.example.com,http://localhost:5173``),
    #: ``*`` for any; empty: none, the browser's same-origin rule applies.
    cors_origins: str = ""

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies(cls, value: str) -> str:
        TrustedProxies.parse(value)  # raises ValueError naming the bad entry
        return value

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
