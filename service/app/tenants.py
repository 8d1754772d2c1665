"""Tenants: the operator's API keys, which CreateGame requires once any is configured.

A key is configured as ``name:secret``: the secret is the key itself or
``sha256:<its SHA-256 hex>``, so that manifests and secrets need not hold
plain keys. (A bare 64-digit hex string is not taken for a hash: ``openssl
rand -hex 32`` makes keys of exactly that shape.) Only hashes are kept in
memory; a presented key is hashed and compared with every configured hash in
constant time.

The name is the tenant: what requestIds, rate limits and the live-game cap
are scoped to, and what logs name. Several keys may share a name, which is
how a key is rotated: the old and the new key are one tenant while both are
configured.

Seat tokens of a game created with a key are derived from it
(:func:`seat_token_of`): the same key's replay of a CreateGame gets them
back, and no one without the key can.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

#: A tenant's name: also part of store keys and of log lines.
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_HASH: Final = re.compile(r"sha256:([0-9a-fA-F]{64})")
#: The shortest plain key accepted: a guessable key would be no key.
MIN_KEY_LENGTH: Final = 16


def key_hash(key: str) -> str:
    """The SHA-256 hex of a key, as configured with ``sha256:``."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class ApiKeys:
    """The configured keys: (tenant name, key hash) pairs."""

    entries: tuple[tuple[str, str], ...] = ()

    @property
    def required(self) -> bool:
        """Whether CreateGame needs a key (any is configured)."""
        return bool(self.entries)

    @classmethod
    def parse(cls, text: str) -> ApiKeys:
        """Entries separated by commas or new lines; ``#`` starts a comment line.

        >>> ApiKeys.parse("acme:" + "k" * 16).entries[0][0]
        'acme'
        >>> ApiKeys.parse("acme:short")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ValueError: API key entry 1 (acme): a key must have at least 16 characters ...
        """
        entries: list[tuple[str, str]] = []
        for number, (name, colon, secret) in enumerate(_items(text), 1):
            if not colon or not _NAME.fullmatch(name):
                raise ValueError(
                    f"API key entry {number}: write name:key or name:sha256:<hex>, the name "
                    "of letters, digits, '.', '_' or '-' (at most 64)"
                )
            hashed = _HASH.fullmatch(secret)
            if hashed:
                entries.append((name, hashed.group(1).lower()))
            elif secret.startswith("sha256:"):
                raise ValueError(
                    f"API key entry {number} ({name}): sha256: must be followed by 64 hex digits"
                )
            elif len(secret) < MIN_KEY_LENGTH:
                raise ValueError(
                    f"API key entry {number} ({name}): a key must have at least "
                    f"{MIN_KEY_LENGTH} characters (or give sha256:<hex>)"
                )
            else:
                entries.append((name, key_hash(secret)))
        return cls(tuple(entries))

    @classmethod
    def load(cls, text: str, file: str) -> ApiKeys:
        """The keys of ``text`` (``RAILYARD_API_KEYS``) and of the file named ``file``."""
        return cls.parse(_with_file(text, file))

    def tenant_of(self, key: str) -> str | None:
        """The tenant whose key this is, or None; every configured hash is
        compared, in constant time, so the time says nothing of which matched."""
        digest = key_hash(key).encode()
        found = None
        for name, stored in self.entries:
            if hmac.compare_digest(digest, stored.encode()):
                found = name
        return found


def plain_keys(text: str, file: str = "") -> tuple[str, ...]:
    """The keys of ``text`` and of the file named ``file`` that are configured
    as themselves (not as ``sha256:``): the log redacts them wherever they
    appear (service.ops.redaction), as it can only do knowing them.

    >>> plain_keys("acme:" + "k" * 16 + ", beta:sha256:" + "0" * 64)
    ('kkkkkkkkkkkkkkkk',)
    """
    return tuple(
        secret
        for _, colon, secret in _items(_with_file(text, file))
        if colon and secret and not _HASH.fullmatch(secret)
    )


def _with_file(text: str, file: str) -> str:
    return text + "\n" + Path(file).read_text() if file else text


def _items(text: str) -> Iterator[tuple[str, str, str]]:
    """Each non-empty entry of a key configuration as (name, ":", secret),
    ":" empty where the entry has none."""
    for line in text.splitlines():
        if line.strip().startswith("#"):
            continue
        for item in line.split(","):
            if item.strip():
                name, colon, secret = item.strip().partition(":")
                yield name.strip(), colon, secret.strip()


def seat_token_of(key: str, game_id: str, seat: int) -> str:
    """A seat's token in a game created with ``key``: HMAC-SHA256 keyed by it,
    192 bits, base64url, never starting with "-" (a command line would read
    it as an option), so only the key's holder can compute it again.

    >>> seat_token_of("k" * 16, "0" * 20, 0) == seat_token_of("k" * 16, "0" * 20, 0)
    True
    >>> seat_token_of("k" * 16, "0" * 20, 0) != seat_token_of("k" * 16, "0" * 20, 1)
    True
    """
    counter = 0
    while True:
        message = f"railyard seat token\0{game_id}\0{seat}\0{counter}".encode()
        digest = hmac.new(key.encode("utf-8", "surrogatepass"), message, hashlib.sha256)
        token = base64.urlsafe_b64encode(digest.digest()[:24]).decode()
        if token[0] != "-":
            return token
        counter += 1
