"""Settings of ``railyard serve``, validated at start-up (flags override env)."""

from __future__ import annotations

from pydantic import AliasChoices, Field
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
    #: Seconds between SSE keep-alive comments (API.md: at most 15).
    keepalive: float = Field(15, gt=0, le=15)
    #: Worker processes for expert bot decisions (unset: one per CPU; 0: none,
    #: every bot decides on the event loop).
    bot_processes: int | None = Field(None, ge=0)
    log_level: str = "info"
