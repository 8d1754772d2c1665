"""The deal shuffle of API.md (MT-FAIR-1), bit for bit.

Any client can recompute a finished game's deals from its revealed seed, so
this must not drift: ``tests/test_shuffle.py`` checks the published vectors.
"""

from __future__ import annotations

import hashlib
import importlib
import struct
from collections.abc import Callable, MutableSequence
from typing import Final, Protocol, TypeVar

T = TypeVar("T")


class _Hash(Protocol):
    def digest(self) -> bytes: ...


def _fast_sha256() -> Callable[[bytes], _Hash]:
    """SHA-256 for a deal's short messages (~40 bytes): CPython's own
    implementation (the one hashlib falls back to) hashes one faster than
    OpenSSL's, which hashlib.sha256 picks, as that sets up a context each
    time, and a 28-tile deal hashes 7. The same function either way: the
    published vectors check it."""
    for module in ("_sha256", "_sha2"):  # CPython 3.11, 3.12+
        try:
            found: Callable[[bytes], _Hash] = importlib.import_module(module).sha256
        except (ImportError, AttributeError):
            continue
        return found
    return hashlib.sha256


_sha256: Final = _fast_sha256()

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
        self._prefix = b"%s\x00%s\x00" % (seed.encode(), label.encode())
        self._counter = 0
        self.words: list[int] = []

    def more(self, count: int) -> None:
        digests = -(-count // _WORDS_PER_DIGEST) or 1
        prefix = self._prefix
        start = self._counter
        blob = b"".join(
            [
                _sha256(prefix + (_COUNTERS[c] if c < 64 else c.to_bytes(8, "big"))).digest()
                for c in range(start, start + digests)
            ]
        )
        self._counter = start + digests
        unpack = _UNPACK[digests] if digests < 64 else struct.Struct(f">{digests * 4}Q")
        self.words.extend(unpack.unpack(blob))


#: The big-endian u64 readers of 1 to 63 digests.
_UNPACK: Final = [struct.Struct(f">{d * _WORDS_PER_DIGEST}Q") for d in range(64)]


def shuffle(seed: str, label: str, items: MutableSequence[T]) -> MutableSequence[T]:
    """API.md step 3: Fisher-Yates from the last index down, in place; returns ``items``."""
    size = len(items)
    if size < 2:
        return items
    stream = _Words(seed, label)
    stream.more(size - 1)
    words = stream.words
    # Fast path: one word per swap. Step 2 rejects a word x for uniform(n)
    # when x >= 2**64 - (2**64 % n), which is above 2**64 - size for every n
    # up to size: a batch whose largest word (max, in C) is below that has no
    # rejection. Otherwise (about once in 2**56 words per swap) the exact
    # path decides word by word.
    if max(words) >= _TWO64 - size:
        return _shuffle_exact(stream, items)
    for i, x in zip(range(size - 1, 0, -1), words, strict=False):
        j = x % (i + 1)
        items[i], items[j] = items[j], items[i]
    return items


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
