"""Signed webhooks for platforms: what happened to a tenant's games, POSTed
to the URL its operator configured (docs/operations.md "Webhooks").

Interface used by the application layer (GameApp): :meth:`Webhooks.emit`
queues one event for the tenant's URL (nothing when the tenant has none:
:meth:`Webhooks.enabled`); each replica's delivery task
(:meth:`Webhooks.start`, :meth:`Webhooks.stop`) sends what is queued.
Receivers check a delivery with :func:`verify`.

**The queue** is the store's (:class:`service.store.Store`'s ``webhook_*``
calls), one per tenant, so that one tenant's backlog never stands in front
of another's. On Redis, with every key under the one hash tag ``{webhooks}``:

* ``<prefix>:{webhooks}:<tenant>:q``, a stream: :meth:`Webhooks.emit` XADDs
  the event (its delivery id, body, time, failures so far) before it
  returns. Every replica reads it through the consumer group ``deliver``,
  as one consumer per process (``host:pid:random``), with XREADGROUP; an
  entry read is in that consumer's pending list until it is settled:
  XACKed and XDELed once delivered (a 2xx) or given up.
* ``<prefix>:{webhooks}:<tenant>:retry``, a sorted set: a failed attempt
  (another status, a timeout, no connection, a refused address) moves its
  entry here, with its failures counted, scored by when it is due again,
  in one script that also acknowledges it, and only if the entry is still
  that consumer's. Each look of each replica's task moves the due ones back
  into the stream (another script), where any replica reads them. The
  schedule is data in Redis: it survives every restart.
* A replica that dies (SIGKILL) leaves its entries pending: every replica
  XAUTOCLAIMs entries idle for ``webhook_claim_idle`` (60 s; at least twice
  ``webhook_timeout``, so a live replica's attempt is never taken), and
  delivers them again. Each process run is a consumer of its own: one that
  holds nothing and has been silent for a day is deleted from the group
  (hourly, by a script that looks and deletes in one step).

So an event is delivered **at least once**: a receiver may get it twice (a
replica died after the receiver answered and before the XACK; stop() cut
an attempt short), always with the same delivery id (the body's ``id``,
the ``Railyard-Delivery`` header), by which it drops the duplicate.

**Retries**: 10 s after the first failure, doubling up to an hour
(``webhook_backoff``, ``webhook_backoff_max``), each delay 75-100% of that
at random; the first failure 24 h (``webhook_retry_for``) or more after the
event drops it, with a log line and ``railyard_webhook_deliveries{outcome=
"dropped"}``. Times are the injected clock's (unix seconds).

**Limits**: a replica makes ``webhook_concurrency`` (16) attempts at once,
``webhook_tenant_concurrency`` (4) to one tenant, each within
``webhook_timeout`` (10 s) in all; it reads from a tenant's queue only as
many entries as it may start, so a slow or dead receiver holds at most its
tenant's share of slots for at most the timeout each, and other tenants'
events go on (each round starts with another tenant, for when slots are
scarce).

**The in-process store** keeps the same queues in memory: not durable (the
process's end loses them), one replica only.

Where deliveries may go, and how the connection is made so that no address
is reached that was not checked, is :mod:`service.app.webhooks.targets`;
the signature is :mod:`service.app.webhooks.signing`.
"""

from service.app.webhooks.delivery import KINDS, Delivery, Webhooks, event_body
from service.app.webhooks.signing import (
    DEFAULT_TOLERANCE,
    DELIVERY_HEADER,
    SIGNATURE_HEADER,
    sign,
    verify,
)
from service.app.webhooks.targets import Endpoint, RefusedTargetError, refusal

__all__ = [
    "DEFAULT_TOLERANCE",
    "DELIVERY_HEADER",
    "KINDS",
    "SIGNATURE_HEADER",
    "Delivery",
    "Endpoint",
    "RefusedTargetError",
    "Webhooks",
    "event_body",
    "refusal",
    "sign",
    "verify",
]
