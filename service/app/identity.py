"""Who a caller is: the seat token its ``authorization`` header carries
(:func:`seat_token`, for both transports), and, for rate limits, its network
address, seen through the proxies the operator trusts and no others.

A bearer token costs an attacker nothing to invent, so it never names a
rate-limit bucket before it is verified (GameApp keys verified seats by
game and seat). An address costs something: this module finds the caller's.
The peer of the connection is the caller, unless the peer is one of the
configured trusted proxies (``--trusted-proxies``, as uvicorn's
``forwarded_allow_ips``): then the ``Forwarded`` (RFC 7239) or
``X-Forwarded-For`` header says who the proxy spoke for, read from the right
(the entries a client wrote itself come first), skipping trusted hops.

>>> proxies = TrustedProxies.parse("10.0.0.0/8")
>>> proxies.client("10.1.2.3", forwarded_for="203.0.113.9, 10.4.4.4")
'203.0.113.9'
>>> proxies.client("198.51.100.7", forwarded_for="203.0.113.9")  # not a proxy: ignored
'198.51.100.7'
>>> rate_key("2001:db8:1:2:3:4:5:6"), rate_key("192.0.2.1")
('addr:2001:db8:1:2::/64', 'addr:192.0.2.1')
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from service.app import errors

_Network = ipaddress.IPv4Network | ipaddress.IPv6Network
_Address = ipaddress.IPv4Address | ipaddress.IPv6Address

#: RFC 6750 section 2.1: ``Bearer`` (any case: RFC 9110 auth-schemes are
#: case-insensitive), one or more spaces, one b64token. ASCII only, so that
#: case-insensitivity does not let U+212A KELVIN SIGN pass for a "k".
_BEARER: Final = re.compile(r"bearer +([a-z0-9._~+/-]+=*)", re.ASCII | re.IGNORECASE)


def seat_token(values: Sequence[str]) -> str | None:
    """The token of a call's ``authorization`` header, given every value it
    was sent with: None when there is none (a spectator). Both transports
    call this, so a header means the same over gRPC and HTTP.

    Anything else but one ``Bearer <token>`` (an empty value, another scheme,
    no token, two tokens, the header twice) is UNAUTHENTICATED: guessing what
    was meant would turn a client's broken header into a spectator that
    silently sees no hand.

    >>> seat_token([]), seat_token(["bearer  abc-_"])
    (None, 'abc-_')
    >>> seat_token(["Basic abc"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    service.app.errors.ServiceError: the authorization header must be 'Bearer <seat token>' ...
    """
    if not values:
        return None
    found = _BEARER.fullmatch(values[0].strip(" \t")) if len(values) == 1 else None
    if found is None:
        raise errors.malformed_authorization()
    return found.group(1)


def api_key_of(values: Sequence[str]) -> str | None:
    """The operator's API key of a call's ``x-api-key`` header, given every
    value it was sent with: None when there is none (or it is empty). Sent
    twice, the values joined as HTTP joins a repeated field: no key then,
    which CreateGame refuses as one (BAD_API_KEY), while a call that needs
    no key is not failed for a header it does not read.

    >>> api_key_of([]), api_key_of([" k "]), api_key_of(["a", "b"])
    (None, 'k', 'a, b')
    """
    key = ", ".join(v.strip(" \t") for v in values)
    return key or None


def _forwarded_hops(header: str) -> list[str]:
    """The ``for=`` of each element of a ``Forwarded`` header (RFC 7239:
    ``for=192.0.2.60;proto=http, for="[2001:db8::1]:4711"``); "" for an
    element without one."""
    hops = []
    for element in header.split(","):
        found = ""
        for pair in element.split(";"):
            name, _, value = pair.strip().partition("=")
            if name.lower() == "for":
                found = value
                break
        hops.append(found)
    return hops


def _address(text: str) -> _Address | None:
    """An address as proxies and gRPC write it (``1.2.3.4``, ``1.2.3.4:80``,
    ``[::1]:80``, ``::1``); None for anything else (``unknown``, ``_hidden``)."""
    value = text.strip().strip('"')
    if value.startswith("["):
        value = value[1 : value.find("]")] if "]" in value else ""
    elif value.count(":") == 1:
        value = value.partition(":")[0]
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        return None


@functools.lru_cache(maxsize=4096)
def grpc_peer_host(peer: str) -> str:
    """The host of a gRPC peer string (``ipv4:1.2.3.4:5678``,
    ``ipv6:[::1]:5678``, ``unix:/path``): the port is dropped, since every
    new connection of one client has a new one.

    Cached: every call of one connection has the same peer string, and
    parsing it (``ipaddress``) was a visible part of a gRPC call's server
    CPU, where a dict hit costs next to nothing.

    >>> grpc_peer_host("ipv4:127.0.0.1:50312"), grpc_peer_host("ipv6:[::1]:7"), grpc_peer_host("")
    ('127.0.0.1', '::1', '')
    """
    kind, _, rest = peer.partition(":")
    if kind in ("ipv4", "ipv6"):
        found = _address(rest)
        return "" if found is None else str(found)
    return peer  # unix sockets and the like: the whole name


def rate_key(host: str) -> str:
    """The rate-limit bucket of an address: IPv6 by its /64, the block one
    host is given (a client would otherwise get a fresh bucket per address
    of its own block)."""
    found = _address(host)
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is None:
        return f"addr:{ipaddress.IPv6Network((found, 64), strict=False)}"
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        return f"addr:{found.ipv4_mapped}"
    return f"addr:{host}"


@dataclass(frozen=True, slots=True)
class TrustedProxies:
    """The networks whose forwarding headers are believed."""

    networks: tuple[_Network, ...] = ()

    @classmethod
    def parse(cls, text: str) -> TrustedProxies:
        """From ``"127.0.0.1, 10.0.0.0/8, ::1"``; ``*`` trusts every peer
        (only where nothing but the proxy can reach the service).
        Raises ValueError for anything that is not an address or network."""
        networks: list[_Network] = []
        for item in (part.strip() for part in text.split(",")):
            if not item:
                continue
            if item == "*":
                networks += [ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0")]
                continue
            try:
                networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                raise ValueError(f"{item!r} is not an IP address or network") from None
        return cls(tuple(networks))

    def trusts(self, host: str) -> bool:
        if not self.networks:
            return False
        found = _address(host)
        return found is not None and any(found in network for network in self.networks)

    def client(
        self, peer: str, *, forwarded: str | None = None, forwarded_for: str | None = None
    ) -> str:
        """The caller's address: ``peer``, or, when ``peer`` is a trusted
        proxy, the last untrusted hop its headers name (``Forwarded`` wins
        over ``X-Forwarded-For``; a header that names nothing usable leaves
        the peer)."""
        if not self.trusts(peer):
            return peer
        hops: Sequence[str] = ()
        if forwarded:
            hops = _forwarded_hops(forwarded)
        elif forwarded_for:
            hops = forwarded_for.split(",")
        client = peer
        for hop in reversed(hops):
            found = _address(hop)
            if found is None:
                break  # an obfuscated or garbled hop: nothing before it is known
            client = str(found)
            if not self.trusts(client):
                break
        return client
