"""A delivery's signature (Stripe's scheme), and the check a receiver makes.

The ``Railyard-Signature`` header is ``t=<unix seconds>,v1=<hex>``, where
``hex`` is HMAC-SHA256, keyed by the tenant's secret, of ``f"{t}."`` and the
body's bytes. The timestamp is inside the MAC, so a receiver that refuses
old timestamps refuses replays of a captured delivery; it is the time of the
attempt, not of the event (the body's ``created``), so a retry a day later
still verifies. While a secret is rotated (two secrets configured for one
tenant) each gets its own ``v1=``, and the receiver accepts any one it knows.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Sequence
from typing import Final

#: The header carrying :func:`sign`'s value.
SIGNATURE_HEADER: Final = "Railyard-Signature"
#: The header carrying the event's delivery id (the body's ``id``): the same
#: on every attempt, so that a receiver can drop a duplicate.
DELIVERY_HEADER: Final = "Railyard-Delivery"
#: Seconds a receiver accepts between a signature's ``t`` and its own clock
#: (either way), by default: Stripe's five minutes.
DEFAULT_TOLERANCE: Final = 300.0


def mac(secret: str, timestamp: int, body: bytes) -> str:
    """The hex HMAC-SHA256 of ``f"{timestamp}."`` and ``body`` under ``secret``."""
    signed = f"{timestamp}.".encode() + body
    return hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def sign(secrets: Sequence[str], timestamp: int, body: bytes) -> str:
    """The ``Railyard-Signature`` value for ``body`` sent at ``timestamp``:
    one ``v1=`` for each of ``secrets``.

    >>> sign(["s" * 16], 1700000000, b"{}")[:15]
    't=1700000000,v1'
    """
    return ",".join([f"t={timestamp}", *(f"v1={mac(s, timestamp, body)}" for s in secrets)])


def verify(
    secret: str,
    header: str,
    body: bytes,
    tolerance: float = DEFAULT_TOLERANCE,
    *,
    now: float | None = None,
) -> bool:
    """Whether ``header`` (a ``Railyard-Signature`` value) signs ``body``
    (the raw bytes received, before any JSON parsing) under ``secret``, at a
    time within ``tolerance`` seconds of ``now`` (default: this machine's
    clock). A receiver answers anything else with a 4xx and ignores it.

    >>> body = b'{"id":"x"}'
    >>> verify("s" * 16, sign(["s" * 16], 1700000000, body), body, now=1700000100)
    True
    >>> verify("s" * 16, sign(["s" * 16], 1700000000, body), body, now=1700001000)
    False
    >>> verify("t" * 16, sign(["s" * 16], 1700000000, body), body, now=1700000000)
    False
    """
    timestamp: int | None = None
    candidates: list[str] = []
    for part in header.split(","):
        name, _, value = part.strip().partition("=")
        if name == "t" and value.isdigit():
            timestamp = int(value)
        elif name == "v1":
            candidates.append(value)
    if timestamp is None or not candidates:
        return False
    if abs((time.time() if now is None else now) - timestamp) > tolerance:
        return False
    expected = mac(secret, timestamp, body).encode()
    # Every candidate compared (no early exit), each in constant time, as
    # bytes: a header may hold any character, compare_digest's strings only ASCII.
    matched = False
    for candidate in candidates:
        matched |= hmac.compare_digest(expected, candidate.encode("utf-8", "replace"))
    return matched
