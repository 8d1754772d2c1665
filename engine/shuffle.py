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


#: Counter suffixes, precomputed for the digests a deal of up to 190 tiles needs.
_COUNTERS: Final = [i.to_bytes(8, "big") for i in range(64)]


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
        parts = []
        prefix = self._prefix
        for counter in range(self._counter, self._counter + digests):
            h = prefix.copy()
            h.update(_COUNTERS[counter] if counter < 64 else counter.to_bytes(8, "big"))
            parts.append(h.digest())
        self._counter += digests
        self.words.extend(struct.unpack(f">{digests * _WORDS_PER_DIGEST}Q", b"".join(parts)))


#: Step 2's rejection limit for each ``n`` below 256: ``_LIMITS[n]`` serves
#: ``uniform(n)``. Every deal fits (double-18 has 190 tiles); larger lists take
#: the exact path, which computes its limits.
_LIMITS: Final = [_TWO64 - (_TWO64 % n) if n else 0 for n in range(256)]


def shuffle(seed: str, label: str, items: MutableSequence[T]) -> MutableSequence[T]:
    """API.md step 3: Fisher-Yates from the last index down, in place; returns ``items``."""
    size = len(items)
    stream = _Words(seed, label)
    stream.more(size)
    # A shuffle of ``size`` items draws ``uniform(size)`` first, so it reads
    # ``_LIMITS[size]``: the table covers it only below its length.
    if size < len(_LIMITS):
        # Fast path: one word per swap. A word is rejected (step 2) about once
        # in 2**56 draws; if it happens, start again on the exact path below.
        original = list(items)
        limits = _LIMITS
        for i, x in zip(range(size - 1, 0, -1), stream.words, strict=False):
            if x >= limits[i + 1]:
                items[:] = original
                return _shuffle_exact(_Words(seed, label), items)
            j = x % (i + 1)
            items[i], items[j] = items[j], items[i]
        return items
    return _shuffle_exact(stream, items)


def _shuffle_exact(stream: _Words, items: MutableSequence[T]) -> MutableSequence[T]:
    """Step 2 and 3 word by word, taking more words after every rejection."""
    words = stream.words
    k = 0
    for i in range(len(items) - 1, 0, -1):
        n = i + 1
        limit = _TWO64 - (_TWO64 % n)
        while True:
            if k == len(words):
                stream.more(i)
            x = words[k]
            k += 1
            if x < limit:
                break
        j = x % n
        items[i], items[j] = items[j], items[i]
    return items
