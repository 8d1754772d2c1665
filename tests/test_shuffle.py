"""MT-FAIR-1: the deal shuffle of API.md matches its published test vectors."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from engine import MexicanTrain, preset
from engine.shuffle import _shuffle_exact, _Words, shuffle
from engine.tiles import TILES, canonical_ids

# A copy of ../shared/vectors/shuffle.json, so the test never depends on the
# checkout's neighbours; test_vectors_copy_is_current keeps it honest.
VECTORS = Path(__file__).parent / "fixtures" / "shuffle.json"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "vectors" / "shuffle.json"
API_MD_START = "3-12 3-9 3-4 8-8 2-4 10-12 4-7 0-4 2-7 4-4".split()
API_MD_END = "4-5 2-12 7-7 7-9 1-4".split()


def _shuffled(seed: str, label: str, set_max: int, set_aside: bool) -> list[str]:
    tiles = list(canonical_ids(set_max))
    if set_aside:
        tiles = [t for t in tiles if t != (set_max << 5 | set_max)]
    return [str(TILES[t]) for t in shuffle(seed, label, tiles)]


def test_mt_fair_1_api_md_vector() -> None:
    out = _shuffled("railyard", "round:1:deal", 12, True)
    assert out[:10] == API_MD_START
    assert out[-5:] == API_MD_END
    assert len(out) == 90


def _cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(VECTORS.read_text())["cases"]
    return cases


@pytest.mark.parametrize("case", _cases(), ids=lambda c: f"{c['seed']}:{c['label']}:{c['set']}")
def test_mt_fair_1_shared_vectors(case: dict[str, Any]) -> None:
    out = _shuffled(case["seed"], case["label"], case["set"], case["engine_set_aside"])
    assert out == case["shuffled"]


def test_mt_fair_1_deal_uses_the_shuffle() -> None:
    """API.md step 5: seat 0 takes the first h tiles, then seat 1 ...; the rest
    is the boneyard drawn from the front."""
    order = _shuffled("railyard", "round:1:deal", 12, True)
    game = MexicanTrain(preset("standard"), 4, "railyard")
    for seat in range(4):
        assert sorted(map(str, game.hand(seat))) == sorted(order[seat * 15 : seat * 15 + 15])
    assert [str(t) for t in game.boneyard_tiles()] == order[60:]


def test_mt_fair_1_seed_commitment() -> None:
    game = MexicanTrain(preset("standard"), 2, "railyard")
    assert game.seed_sha256 == hashlib.sha256(b"railyard").hexdigest()


@pytest.mark.skipif(not SHARED.exists(), reason="../shared is not beside this checkout")
def test_vectors_copy_is_current() -> None:
    assert json.loads(SHARED.read_text()) == json.loads(VECTORS.read_text())


def _api_md_shuffle(seed: str, label: str, items: list[int]) -> list[int]:
    """API.md steps 1-3 written out word by word, apart from engine.shuffle."""
    words: list[int] = []
    counter = 0

    def uniform(n: int) -> int:
        nonlocal counter
        limit = 2**64 - (2**64 % n)
        while True:
            if not words:
                digest = hashlib.sha256(
                    seed.encode() + b"\x00" + label.encode() + b"\x00" + counter.to_bytes(8, "big")
                ).digest()
                counter += 1
                words.extend(int.from_bytes(digest[k : k + 8], "big") for k in range(0, 32, 8))
            x = words.pop(0)
            if x < limit:
                return x % n

    for i in range(len(items) - 1, 0, -1):
        j = uniform(i + 1)
        items[i], items[j] = items[j], items[i]
    return items


@pytest.mark.parametrize("size", [2, 90, 254, 255, 256, 257, 300, 511, 1024])
@pytest.mark.parametrize("seed", ["railyard", "seed-2", "ünïcode"])
def test_mt_fair_1_shuffle_matches_api_md_at_every_size(seed: str, size: int) -> None:
    """``shuffle`` gives API.md's result at every size, on both sides of its fast
    path's table (256 items used to raise IndexError), and agrees with its own
    exact path (``_shuffle_exact``)."""
    want = _api_md_shuffle(seed, "round:1:deal", list(range(size)))
    assert _shuffle_exact(_Words(seed, "round:1:deal"), list(range(size))) == want
    assert list(shuffle(seed, "round:1:deal", list(range(size)))) == want


def test_mt_fair_1_fast_path_hands_a_rejectable_word_to_the_exact_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """API.md step 2 rejects a word at or above uniform(n)'s limit; such words
    come about once in 2**56, so one is planted: the fast path must leave the
    batch to the exact path, which skips it, and no item moves before that."""
    real_more = _Words.more

    def more(self: _Words, count: int) -> None:
        first = not self.words
        real_more(self, count)
        if first:
            self.words[0] = (1 << 64) - 1  # 2**64 % 28 != 0: uniform(28) rejects it

    monkeypatch.setattr(_Words, "more", more)
    want = _shuffle_exact(_Words("seed", "round:1:deal"), list(range(28)))
    unrejected = list(range(28))
    j = ((1 << 64) - 1) % 28  # what taking the word would have swapped
    unrejected[27], unrejected[j] = unrejected[j], unrejected[27]
    assert want[27] != unrejected[27]
    assert list(shuffle("seed", "round:1:deal", list(range(28)))) == want


def test_mt_fair_1_the_deals_sha256_is_sha256() -> None:
    """The shuffle hashes with CPython's own SHA-256 where it has one (faster on
    short messages than OpenSSL's): it must be SHA-256 exactly."""
    import hashlib

    from engine.shuffle import _sha256

    for message in (b"", b"abc", b"seed\x00round:1:deal\x00" + bytes(8), bytes(range(256)) * 3):
        assert _sha256(message).digest() == hashlib.sha256(message).digest()
