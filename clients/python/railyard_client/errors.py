"""Refusals of the service as exceptions, the same from both transports.

API.md's error shape: a gRPC status code, and a ``google.rpc.Status`` whose
one ``ErrorInfo`` carries the ``reason`` (``NOT_YOUR_TURN``, ``ILLEGAL_MOVE``
...) and ``metadata`` naming the broken rule (``rule``) or the bad input
(``field``). gRPC sends the Status in the ``grpc-status-details-bin``
trailer; HTTP sends it as the JSON body.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import grpc
from google.protobuf import json_format
from google.rpc import error_details_pb2, status_pb2

#: HTTP status -> gRPC code, for an answer whose body is not a Status (a proxy's 502).
_HTTP_TO_GRPC: dict[int, grpc.StatusCode] = {
    400: grpc.StatusCode.INVALID_ARGUMENT,
    401: grpc.StatusCode.UNAUTHENTICATED,
    403: grpc.StatusCode.PERMISSION_DENIED,
    404: grpc.StatusCode.NOT_FOUND,
    408: grpc.StatusCode.DEADLINE_EXCEEDED,
    409: grpc.StatusCode.ABORTED,
    429: grpc.StatusCode.RESOURCE_EXHAUSTED,
    499: grpc.StatusCode.CANCELLED,
    501: grpc.StatusCode.UNIMPLEMENTED,
    503: grpc.StatusCode.UNAVAILABLE,
    504: grpc.StatusCode.DEADLINE_EXCEEDED,
}
_BY_VALUE: dict[int, grpc.StatusCode] = {code.value[0]: code for code in grpc.StatusCode}
#: How grpc's channel fails a call it never sent: no connection could be made.
_NOT_CONNECTED = "failed to connect to all addresses"


class RailyardError(Exception):
    """A call the service refused (or could not be made).

    ``code`` is the gRPC status code on both transports; ``reason`` the
    ErrorInfo reason; ``rule`` and ``field`` come from its metadata when the
    service named them; ``http_status`` is set for HTTP answers;
    ``is_unsent`` says the request never left the client.
    """

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        reason: str = "",
        metadata: Mapping[str, str] | None = None,
        *,
        http_status: int | None = None,
        retry_after: float | None = None,
        is_unsent: bool = False,
    ) -> None:
        super().__init__(
            f"{code.name} {reason}: {message}" if reason else f"{code.name}: {message}"
        )
        self.code = code
        self.message = message
        self.reason = reason
        self.metadata: dict[str, str] = dict(metadata or {})
        self.http_status = http_status
        self.retry_after = retry_after
        #: True when the request surely never reached the service (its
        #: connection could not be made): repeating it is safe, whatever it asked.
        self.is_unsent = is_unsent

    @property
    def rule(self) -> str | None:
        """The RULES.md id of the rule the move broke (``MT-DBL-3``), if any."""
        return self.metadata.get("rule")

    @property
    def field(self) -> str | None:
        """The input the service refused (``players``, ``body`` ...), if it named one."""
        return self.metadata.get("field")

    @property
    def is_retryable(self) -> bool:
        """True where repeating the same request (same ``requestId``) may succeed."""
        return self.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED)


def _from_status(
    status: status_pb2.Status,
    code: grpc.StatusCode,
    *,
    http_status: int | None = None,
    retry_after: float | None = None,
) -> RailyardError:
    reason, metadata = "", {}
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            reason, metadata = info.reason, dict(info.metadata)
            break
    return RailyardError(
        code,
        status.message,
        reason,
        metadata,
        http_status=http_status,
        retry_after=retry_after,
    )


def from_grpc(exc: grpc.RpcError) -> RailyardError:
    """The RailyardError of a failed gRPC call (sync or asyncio)."""
    call: Any = exc
    code: grpc.StatusCode = call.code()
    message: str = call.details() or ""
    for key, value in call.trailing_metadata() or ():
        if key == "grpc-status-details-bin" and isinstance(value, bytes):
            status = status_pb2.Status.FromString(value)
            return _from_status(status, code)
    # No Status: a transport failure (connection refused, stream reset). Only
    # a channel that could not connect is sure the call was never sent; grpc
    # core says so in these words (its transparent retries rest on the same).
    unsent = code is grpc.StatusCode.UNAVAILABLE and message.startswith(_NOT_CONNECTED)
    return RailyardError(code, message, is_unsent=unsent)


def from_http(status_code: int, body: bytes, headers: Mapping[str, str]) -> RailyardError:
    """The RailyardError of an HTTP answer that is not 2xx."""
    retry_after: float | None = None
    if "retry-after" in headers:
        try:
            retry_after = float(headers["retry-after"])
        except ValueError:
            retry_after = None
    fallback = _HTTP_TO_GRPC.get(status_code, grpc.StatusCode.UNKNOWN)
    try:
        status = json_format.Parse(body, status_pb2.Status(), ignore_unknown_fields=True)
    except json_format.ParseError:
        text = body.decode(errors="replace").strip()[:200]
        return RailyardError(
            fallback,
            text or f"HTTP {status_code}",
            http_status=status_code,
            retry_after=retry_after,
        )
    code = _BY_VALUE.get(status.code, fallback)
    return _from_status(status, code, http_status=status_code, retry_after=retry_after)


def transport_error(exc: Exception, *, is_unsent: bool = False) -> RailyardError:
    """A connection that failed before any answer: UNAVAILABLE, like gRPC's own.
    ``is_unsent``: it failed before the request was sent (no connection)."""
    return RailyardError(
        grpc.StatusCode.UNAVAILABLE, f"{type(exc).__name__}: {exc}", is_unsent=is_unsent
    )
