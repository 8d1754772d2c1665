"""Token buckets per caller (API.md: RESOURCE_EXHAUSTED / 429 with Retry-After).

:class:`TokenBuckets` keeps them in this process: the limit is then per
replica (``rate_limit_scope = "replica"``, the default), or the memory store's
when it is asked to share them. The Redis store keeps the same buckets in
Redis (``rate_limit_scope = "store"``), so that every replica draws from one
bucket per caller.

Which bucket a call draws from is the application's choice (GameApp): a
verified seat, else the caller's address (service.app.identity), never a token
that was not checked.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Final

#: Buckets kept at most: the least recently used is forgotten past it, which
#: only ever hands that caller a full bucket again.
MAX_BUCKETS: Final = 100_000


class TokenBuckets:
    """``burst`` tokens per key, refilled at ``rate`` per second; at most
    ``max_buckets`` keys (least recently used forgotten first), O(1) a call."""

    def __init__(
        self, max_buckets: int = MAX_BUCKETS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        """``clock``: seconds, what the buckets refill by."""
        if max_buckets < 1:
            raise ValueError("max_buckets must be at least 1")
        self._max = max_buckets
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._buckets)

    def take(self, key: str, rate: float, burst: int) -> float:
        """Take a token for ``key``: 0.0, or the seconds until one is there
        (then nothing is taken)."""
        now = self._clock()
        buckets = self._buckets
        held = buckets.get(key)
        if held is None:
            tokens = float(burst)
            if len(buckets) >= self._max:
                buckets.popitem(last=False)
        else:
            tokens = min(float(burst), held[0] + (now - held[1]) * rate)
            buckets.move_to_end(key)
        if tokens < 1:
            buckets[key] = (tokens, now)
            return (1 - tokens) / rate
        buckets[key] = (tokens - 1, now)
        return 0.0
