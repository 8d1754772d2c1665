"""Settings of ``railyard serve``, validated at start-up (flags override env)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


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
    #: Requests per second allowed per caller (token, else peer); 0 = no limit.
    rate_limit: float = Field(0, ge=0)
    rate_burst: int = Field(50, ge=1)
    #: Where the callers' buckets live: "replica" (in each process: N replicas
    #: allow N times the rate) or "store" (in Redis: one limit for all).
    rate_limit_scope: Literal["replica", "store"] = "replica"
    #: Open WatchGame streams per process, both transports together; one more
    #: is refused before it starts (RESOURCE_EXHAUSTED TOO_MANY_WATCHERS, HTTP
    #: 429 with Retry-After). Watchers cost Redis nothing per stream now (one
    #: subscriber connection per process); each costs the process 40-55 KiB
    #: (bench/watchers.py: 2,000 SSE streams took 104 MiB), a socket, and a
    #: store read per keep-alive period. 2,000 fit the 512 MiB, one-CPU
    #: replica of deploy/k8s with room for its requests, under a 4,096
    #: open-files limit; lower it where the limit is 1,024.
    max_watchers: int = Field(2000, ge=1)
    #: Seconds between SSE keep-alive comments (API.md: at most 15).
    keepalive: float = Field(15, gt=0, le=15)
    #: Worker processes for expert bot decisions (unset: one per CPU; 0: none,
    #: every bot decides on the event loop).
    bot_processes: int | None = Field(None, ge=0)
    log_level: str = "info"
    #: "text" for people, "json" (one object per line) for log pipelines.
    log_format: Literal["text", "json"] = "text"
    #: Web origins whose pages may call the HTTP API from a browser (CORS):
    #: comma-separated (``https://play.example.com,http://localhost:5173``),
    #: ``*`` for any; empty: none, the browser's same-origin rule applies.
    cors_origins: str = ""

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
