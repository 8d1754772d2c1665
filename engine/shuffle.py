"""The deal shuffle of API.md (MT-FAIR-1), bit for bit.

Any client can recompute a finished game's deals from its revealed seed, so
this must not drift: ``tests/test_shuffle.py`` checks the published vectors.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import MutableSequence
from typing import Final, TypeVar

T = TypeVar("T")

_TWO64: Final = 1 << 64
_WORDS_PER_DIGEST: Final = 4


class _Words:
    """API.md step 1: SHA-256(seed 0x00 label 0x00 counter) read as big-endian u64s.

    Digests are computed in batches (a shuffle of n items needs n - 1 words,
    plus a rare rejected one), since one call per word dominated a deal.
    """

    __slots__ = ("_counter", "_prefix", "words")

    def __init__(self, seed: str, label: str) -> None:
        self._prefix = hashlib.sha256(seed.encode() + b"\x00" + label.encode() + b"\x00")
        self._counter = 0
        self.words: list[int] = []

    def more(self, count: int) -> None:
        digests = max(1, -(-count // _WORDS_PER_DIGEST))
        blob = bytearray()
        for counter in range(self._counter, self._counter + digests):
            h = self._prefix.copy()
            h.update(counter.to_bytes(8, "big"))
            blob += h.digest()
        self._counter += digests
        self.words.extend(struct.unpack(f">{digests * _WORDS_PER_DIGEST}Q", blob))


#: Step 2's rejection limits for the list sizes a deal uses (larger ones computed).
_LIMITS: Final = [_TWO64 - (_TWO64 % n) if n else 0 for n in range(256)]


def shuffle(seed: str, label: str, items: MutableSequence[T]) -> MutableSequence[T]:
    """API.md step 3: Fisher-Yates from the last index down, in place; returns ``items``."""
    stream = _Words(seed, label)
    stream.more(len(items))
    words = stream.words
    k = 0
    for i in range(len(items) - 1, 0, -1):
        n = i + 1
        # Step 2: rejection sampling keeps every index equally likely.
        limit = _LIMITS[n] if n < 256 else _TWO64 - (_TWO64 % n)
        x = words[k]
        k += 1
        while x >= limit:  # about once in 2**56 draws for a deal: the slow path
            if k == len(words):
                stream.more(i)
            x = words[k]
            k += 1
        if k == len(words):
            stream.more(i)
        j = x % n
        items[i], items[j] = items[j], items[i]
    return items
