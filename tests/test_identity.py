"""Rate-limit identities (issue 9): addresses through trusted proxies only,
and token buckets in bounded memory."""

from __future__ import annotations

import doctest
import re

import pytest

from service.app import identity
from service.app.identity import TrustedProxies, grpc_peer_host, rate_key
from service.app.ratelimit import TokenBuckets


def test_doctests() -> None:
    failures, tried = doctest.testmod(identity)
    assert tried > 0
    assert failures == 0


def test_an_untrusted_peer_is_the_client_whatever_it_forwards() -> None:
    proxies = TrustedProxies.parse("10.0.0.0/8")
    assert proxies.client("192.0.2.7", forwarded_for="1.1.1.1") == "192.0.2.7"
    assert proxies.client("192.0.2.7", forwarded="for=1.1.1.1") == "192.0.2.7"
    assert TrustedProxies().client("127.0.0.1", forwarded_for="1.1.1.1") == "127.0.0.1"


def test_a_trusted_proxy_names_the_last_untrusted_hop() -> None:
    proxies = TrustedProxies.parse("10.0.0.0/8, ::1")
    # The client may write anything first; the proxies append what they saw.
    chain = "6.6.6.6, 203.0.113.9, 10.0.0.2"
    assert proxies.client("10.0.0.1", forwarded_for=chain) == "203.0.113.9"
    assert proxies.client("::1", forwarded_for="203.0.113.9:4711") == "203.0.113.9"
    forwarded = 'for=6.6.6.6, for="[2001:db8::7]:80";proto=https, for=10.1.1.1'
    assert proxies.client("10.0.0.1", forwarded=forwarded) == "2001:db8::7"
    # Forwarded wins over X-Forwarded-For; garbage names nobody past it.
    assert proxies.client("10.0.0.1", forwarded="for=198.51.100.1", forwarded_for="7.7.7.7") == (
        "198.51.100.1"
    )
    assert proxies.client("10.0.0.1", forwarded_for="9.9.9.9, unknown") == "10.0.0.1"
    assert proxies.client("10.0.0.1", forwarded_for="10.0.0.3") == "10.0.0.3"  # all trusted


def test_bad_proxy_settings_are_refused() -> None:
    with pytest.raises(ValueError, match=re.escape("'10.0.0.0/33'")):
        TrustedProxies.parse("10.0.0.0/33")
    assert len(TrustedProxies.parse("*").networks) == 2


def test_grpc_peers_lose_their_port_and_ipv6_counts_by_its_64() -> None:
    assert grpc_peer_host("ipv4:203.0.113.9:40000") == grpc_peer_host("ipv4:203.0.113.9:40001")
    assert grpc_peer_host("ipv6:[2001:db8::1]:5") == "2001:db8::1"
    assert grpc_peer_host("unix:/tmp/s") == "unix:/tmp/s"
    assert rate_key("2001:db8:0:1::1") == rate_key("2001:db8:0:1:ffff::2")
    assert rate_key("2001:db8:0:1::1") != rate_key("2001:db8:0:2::1")
    assert rate_key("::ffff:192.0.2.1") == rate_key("192.0.2.1")


def test_token_buckets_forget_the_least_recently_used_past_their_bound() -> None:
    buckets = TokenBuckets(max_buckets=3)
    for key in "abc":
        assert buckets.take(key, rate=0.001, burst=1) == 0.0
    assert buckets.take("a", rate=0.001, burst=1) > 0  # a is dry, and now the most recent
    assert buckets.take("d", rate=0.001, burst=1) == 0.0  # b, the oldest, goes
    assert len(buckets) == 3
    assert buckets.take("a", rate=0.001, burst=1) > 0  # a was kept
    assert buckets.take("b", rate=0.001, burst=1) == 0.0  # b starts afresh
    assert len(buckets) == 3
