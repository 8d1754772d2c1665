"""Token buckets per caller (API.md: RESOURCE_EXHAUSTED / 429 with Retry-After).

:class:`TokenBuckets` keeps them in this process: the limit is then per
replica (``rate_limit_scope = "replica"``, the default), or the memory store's
when it is asked to share them. The Redis store keeps the same buckets in
Redis (``rate_limit_scope = "store"``), so that every replica draws from one
bucket per caller.
"""

from __future__ import annotations

import time


class TokenBuckets:
    """``burst`` tokens per key, refilled at ``rate`` per second."""

    def __init__(self) -> None:
        self._buckets: dict[str, tuple[float, float]] = {}

    def take(self, key: str, rate: float, burst: int) -> float:
        """Take a token for ``key``: 0.0, or the seconds until one is there
        (then nothing is taken)."""
        now = time.monotonic()
        tokens, last = self._buckets.get(key, (float(burst), now))
        tokens = min(float(burst), tokens + (now - last) * rate)
        if tokens < 1:
            self._buckets[key] = (tokens, now)
            return (1 - tokens) / rate
        self._buckets[key] = (tokens - 1, now)
        if len(self._buckets) > 100_000:  # forget idle callers
            self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < 60}
        return 0.0
