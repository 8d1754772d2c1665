"""Where webhooks go: the operator's configuration, and the only addresses
the service will connect to.

A tenant's webhook is configured as ``<tenant> <url> <secret>`` (entries
separated by new lines or commas, ``#`` starting a comment line). The URL is
``https://``; ``http://`` only with ``webhook_allow_private``, which is for
tests and local receivers. Two entries of one tenant with the same URL are a
secret's rotation: deliveries are signed with both.

Server-side request forgery: a webhook URL is chosen by whoever configures
it, and the service POSTs from inside the deployment's network, where
Redis, cloud metadata (169.254.169.254) and internal services answer. So,
unless private targets are allowed, an address is refused when it is not
globally reachable (:func:`refusal`): loopback, private (RFC 1918, ULA
``fc00::/7``), link-local (``169.254/16``, ``fe80::/10``), unspecified,
multicast, reserved, shared address space (CGNAT ``100.64/10``),
documentation and benchmarking ranges, and IPv6 forms that embed such an
IPv4 address (mapped, 6to4, NAT64, Teredo). A URL whose host is a literal
address is checked at configuration; a host name is resolved at every
connection and *every* address it has is checked (one bad answer refuses
the connection: a name with a private address is not a public receiver).
The connection then goes to an address that was checked
(:class:`GuardedBackend` is httpcore's network backend: it resolves, checks
and connects itself), so a name cannot resolve to one address for the check
and another for the connection (DNS rebinding). TLS is verified against the
URL's host name, and SNI carries it, as for any HTTPS client. No proxy is
used (one would connect elsewhere), and redirects are not followed.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import ssl
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

import httpcore
import httpx

#: A tenant's name, as service.app.tenants accepts it.
_TENANT: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
#: The shortest secret accepted: a guessable secret would sign nothing.
MIN_SECRET_LENGTH: Final = 16

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
#: Resolves a host name and port to addresses (text), as getaddrinfo does.
Resolve = Callable[[str, int], Awaitable[list[str]]]

_CGNAT: Final = ipaddress.IPv4Network("100.64.0.0/10")
_PROTOCOL_ASSIGNMENTS: Final = ipaddress.IPv4Network("192.0.0.0/24")
#: RFC 1918 and unique local addresses (RFC 4193).
_PRIVATE: Final = tuple(
    ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7")
)
_NAT64: Final = ipaddress.IPv6Network("64:ff9b::/96")


class RefusedTargetError(Exception):
    """A webhook's host is, or resolves to, an address that is refused."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A tenant's webhook: where its events go, and the secrets signing them
    (more than one while a secret is rotated)."""

    tenant: str
    url: str
    secrets: tuple[str, ...]

    def __repr__(self) -> str:  # (never the secrets: a repr may reach a log)
        return f"Endpoint({self.tenant!r}, {self.url!r}, {len(self.secrets)} secret(s))"


def refusal(address: Address) -> str | None:
    """Why ``address`` is not one a webhook may reach, or None when it is
    globally reachable.

    >>> refusal(ipaddress.ip_address("169.254.169.254"))
    'link-local'
    >>> refusal(ipaddress.ip_address("100.64.0.1"))
    'shared address space (CGNAT)'
    >>> refusal(ipaddress.ip_address("::ffff:10.0.0.1"))
    'private (IPv4-mapped 10.0.0.1)'
    >>> refusal(ipaddress.ip_address("93.184.216.34")) is None
    True
    """
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            kind, inner = embedded
            reason = refusal(inner)
            return None if reason is None else f"{reason} ({kind} {inner})"
    for reason, refused in (
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("reserved", address.is_reserved),
        ("shared address space (CGNAT)", address in _CGNAT),
        ("private", any(address in network for network in _PRIVATE)),
        # Anything else IANA's registries say is not globally reachable
        # (documentation, benchmarking, protocol assignments, ...).
        ("not globally reachable", address.is_private or not address.is_global),
        # (IETF protocol assignments, which Python 3.11 counts as global.)
        ("not globally reachable", address in _PROTOCOL_ASSIGNMENTS),
    ):
        if refused:
            return reason
    return None


def _embedded_ipv4(address: ipaddress.IPv6Address) -> tuple[str, ipaddress.IPv4Address] | None:
    """The IPv4 address an IPv6 one carries (and how), which is where a
    packet to it ends up."""
    if address.ipv4_mapped is not None:
        return "IPv4-mapped", address.ipv4_mapped
    if address.sixtofour is not None:
        return "6to4", address.sixtofour
    if address in _NAT64:
        return "NAT64", ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.teredo is not None:
        return "Teredo", address.teredo[1]
    return None


def check_address(text: str, host: str) -> None:
    """RefusedTargetError unless ``text`` (an address ``host`` has) may be reached."""
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])  # (an IPv6 zone: its address)
    except ValueError:
        raise RefusedTargetError(f"{host} resolves to {text!r}, not an address") from None
    reason = refusal(address)
    if reason is not None:
        shown = host if host == text else f"{host} resolves to {text}: it"
        raise RefusedTargetError(f"{shown} is {reason}; such targets need --webhook-allow-private")


def check_url(url: str, *, allow_private: bool) -> None:
    """ValueError saying what is wrong with ``url`` as a webhook's, as far
    as can be told without resolving its host."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"{url!r} is not a URL ({exc})") from None
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ValueError(f"{url!r} is not an https:// URL")
    if parts.scheme == "http" and not allow_private:
        raise ValueError(
            f"{url!r}: webhooks are sent over https:// (http:// only with "
            "webhook_allow_private, for tests and local receivers)"
        )
    if parts.username is not None or parts.password is not None:
        raise ValueError(f"{parts.hostname}: no user or password in a webhook URL")
    if port == 0:
        raise ValueError(f"{url!r}: port 0")
    if allow_private:
        return
    try:
        ipaddress.ip_address(parts.hostname)
    except ValueError:
        return  # a name: resolved, and its addresses checked, at each connection
    try:
        check_address(parts.hostname, parts.hostname)
    except RefusedTargetError as exc:
        raise ValueError(str(exc)) from None


def parse_endpoints(text: str, *, allow_private: bool) -> dict[str, Endpoint]:
    """Each tenant's :class:`Endpoint` from entries ``<tenant> <url> <secret>``,
    separated by new lines or commas; ``#`` starts a comment line. ValueError
    names the entry (never its secret).

    >>> parse_endpoints("acme https://hooks.example/r " + "s" * 16, allow_private=False)
    {'acme': Endpoint('acme', 'https://hooks.example/r', 1 secret(s))}
    >>> parse_endpoints("acme https://10.1.2.3/r " + "s" * 16, allow_private=True)
    {'acme': Endpoint('acme', 'https://10.1.2.3/r', 1 secret(s))}
    >>> parse_endpoints(  # doctest: +ELLIPSIS
    ...     "acme https://10.1.2.3/r " + "s" * 16, allow_private=False
    ... )
    Traceback (most recent call last):
    ValueError: webhook entry 1 (acme): 10.1.2.3 is private; such targets need --webhook-...
    """
    endpoints: dict[str, Endpoint] = {}
    for number, words in enumerate(_entries(text), 1):
        if len(words) != 3 or not _TENANT.fullmatch(words[0]):
            name = f" ({words[0]})" if _TENANT.fullmatch(words[0]) else ""
            raise ValueError(
                f"webhook entry {number}{name}: write <tenant> <url> <secret>, separated by "
                "spaces, the tenant named as its API keys are"
            )
        tenant, url, secret = words
        where = f"webhook entry {number} ({tenant})"
        if len(secret) < MIN_SECRET_LENGTH:
            raise ValueError(f"{where}: a secret must have at least {MIN_SECRET_LENGTH} characters")
        try:
            check_url(url, allow_private=allow_private)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        known = endpoints.get(tenant)
        if known is None:
            endpoints[tenant] = Endpoint(tenant, url, (secret,))
        elif known.url != url:
            raise ValueError(
                f"{where}: the tenant has a webhook at another URL already (one URL a tenant; "
                "two entries with the same URL are a secret's rotation)"
            )
        elif secret not in known.secrets:
            endpoints[tenant] = Endpoint(tenant, url, (*known.secrets, secret))
    return endpoints


def load_endpoints(text: str, file: str, *, allow_private: bool) -> dict[str, Endpoint]:
    """The endpoints of ``text`` (``RAILYARD_WEBHOOKS``) and of the file named
    ``file`` (one entry a line: a mounted secret)."""
    return parse_endpoints(
        text + "\n" + Path(file).read_text() if file else text, allow_private=allow_private
    )


def secrets_of(text: str, file: str = "") -> tuple[str, ...]:
    """Every secret written in the entries (for the log to redact), whether
    or not the entries are valid."""
    found = text + "\n" + Path(file).read_text() if file else text
    return tuple(words[2] for words in _entries(found) if len(words) >= 3)


def _entries(text: str) -> Iterator[list[str]]:
    for line in text.splitlines():
        if line.strip().startswith("#"):
            continue
        for item in line.split(","):
            if item.strip():
                yield item.split()


# ------------------------------------------------------------------ connecting


async def resolve(host: str, port: int) -> list[str]:
    """Every address of ``host`` (getaddrinfo, TCP), without repeats."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's connections, opened only to addresses that were checked:
    the host is resolved here, each of its addresses checked (unless
    ``allow_private``), and the connection made to them in turn."""

    def __init__(self, *, allow_private: bool, resolver: Resolve = resolve) -> None:
        self._allow_private = allow_private
        self._resolve = resolver
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            addresses = await self._resolve(host, port)
        except OSError as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from exc
        if not addresses:
            raise httpcore.ConnectError(f"{host} has no address")
        if not self._allow_private:
            for address in addresses:
                check_address(address, host)
        failure: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise RefusedTargetError("webhooks connect over TCP only")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


#: httpcore's failures as httpx's (the client's callers catch httpx.HTTPError).
_MAPPED: Final[tuple[tuple[type[Exception], type[httpx.TransportError]], ...]] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.TimeoutException, httpx.TimeoutException),
)


class _ResponseStream(httpx.AsyncByteStream):
    """httpcore's response body as httpx reads it."""

    def __init__(self, stream: AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        close = getattr(self._stream, "aclose", None)
        if close is not None:
            await close()


class GuardedTransport(httpx.AsyncBaseTransport):
    """An httpx transport over a connection pool whose every connection is
    made by :class:`GuardedBackend`; no proxy, no environment settings."""

    def __init__(
        self,
        *,
        allow_private: bool,
        max_connections: int,
        resolver: Resolve = resolve,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context or httpx.create_ssl_context(),
            max_connections=max_connections,
            keepalive_expiry=30.0,
            network_backend=GuardedBackend(allow_private=allow_private, resolver=resolver),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.AsyncByteStream)
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        try:
            response = await self._pool.handle_async_request(core)
        except Exception as exc:
            for core_error, mapped in _MAPPED:
                if isinstance(exc, core_error):
                    raise mapped(str(exc) or type(exc).__name__, request=request) from exc
            raise
        assert isinstance(response.stream, AsyncIterable)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()
