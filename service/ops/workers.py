"""``railyard serve --workers N``: N processes serving the same two ports.

Each worker is a whole replica (``service.ops.serve.serve``: its own GameApp,
background player, bot pool and metrics) over the shared store, so nothing
but the store is shared and any worker answers for any game. The ports are
shared with SO_REUSEPORT: every worker binds and listens on both itself, and
the kernel spreads new connections over the listening sockets by a hash of
their addresses. (One listening socket accepted from by N processes would
leave the balance to whichever process wakes first.)

This process, the supervisor, serves nothing. It checks that both ports are
free, resolves port 0 to one concrete port and holds both (bound, not
listening, with SO_REUSEPORT: a process without it cannot take them while a
worker restarts), starts the workers, starts again any worker that dies
unexpectedly (with a growing delay, logged), and on SIGTERM/SIGINT passes
SIGTERM on to each worker, which stops as a single process does (streams
closed, background games handed back), then exits when they all have.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import multiprocessing
import os
import signal
import socket
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Final

from service.ops.sockets import bound_socket, family
from service.settings import Settings

log = logging.getLogger("railyard")

#: Seconds before a dead worker's first restart; doubled on each death that
#: follows within ``STEADY`` seconds of its start, up to ``MAX_BACKOFF``.
FIRST_BACKOFF: Final = 0.5
MAX_BACKOFF: Final = 30.0
#: A worker that ran this long before it died counts as healthy: its next
#: restart waits FIRST_BACKOFF again.
STEADY: Final = 60.0
#: Seconds the workers have to stop after SIGTERM (each bounds its own
#: graceful stop at about 5 s) before they are killed.
STOP_TIMEOUT: Final = 25.0
#: Seconds a worker has to become ready at the first start.
START_TIMEOUT: Final = 60.0

#: Linux's prctl option that signals a process when its parent dies.
_PR_SET_PDEATHSIG: Final = 1


def cpu_count() -> int:
    """CPUs this process may run on (its affinity: a container's cpuset)."""
    with contextlib.suppress(AttributeError, OSError):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


class WorkersRefusedError(Exception):
    """A worker count that this configuration cannot serve."""


def worker_count(settings: Settings) -> int:
    """The workers ``settings`` ask for: the configured count, else one per
    CPU over Redis and one over the in-process store; WorkersRefusedError for
    more than one over the in-process store."""
    if not settings.redis_url:
        if settings.workers is not None and settings.workers > 1:
            raise WorkersRefusedError(
                f"{settings.workers} workers (--workers, RAILYARD_WORKERS) need a shared "
                "store: with the in-process memory store each process would hold its own "
                "games; set REDIS_URL (--redis-url) or use --workers 1"
            )
        return 1
    return settings.workers if settings.workers is not None else cpu_count()


def _hold(host: str, port: int, what: str, flag: str) -> socket.socket:
    """A socket bound (not listening) to ``host:port`` with SO_REUSEPORT, after
    a bind without it found the port free (with it, the bind would succeed
    beside another process's SO_REUSEPORT socket and share its connections)."""
    from service.ops.serve import StartupError

    def refused(exc: OSError) -> StartupError:
        env = f"RAILYARD_{what.upper()}_PORT"
        return StartupError(
            f"{what} cannot listen on {host}:{port} ({exc.strerror}): choose another with "
            f"{flag} / {env} (or --host / RAILYARD_HOST)"
        )

    with socket.socket(family(host), socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise refused(exc) from None
        port = probe.getsockname()[1]
    try:
        return bound_socket(host, port, reuse_port=True)
    except OSError as exc:
        raise refused(exc) from None


def _worker(settings: Settings, supervisor: int, ready: Connection) -> None:
    """One worker process: ``serve(settings)`` until SIGTERM."""
    import asyncio

    from service.ops.serve import StartupError, serve
    from service.ops.telemetry import configure_logging

    # Stop (gracefully) when the supervisor dies, even by SIGKILL: no
    # worker outlives it on the ports.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != supervisor:  # it died before the line above
        return
    # Each worker is its own instance in OpenTelemetry's terms (the SDK's
    # default id is a random UUID): named by host and pid, its metrics
    # (target_info on /metrics, any OTLP push) say which worker's log lines
    # and process they go with.
    instance = f"{socket.gethostname()}-{os.getpid()}"
    attributes = os.environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
    os.environ["OTEL_RESOURCE_ATTRIBUTES"] = ",".join(
        a for a in (attributes, f"service.instance.id={instance}") if a
    )
    configure_logging(settings.log_level, settings.log_format, settings.log_secrets())

    async def run() -> None:
        started = asyncio.Event()
        task = asyncio.create_task(serve(settings, started))
        ready_wait = asyncio.create_task(started.wait())
        await asyncio.wait((task, ready_wait), return_when=asyncio.FIRST_COMPLETED)
        ready_wait.cancel()
        if started.is_set():
            ready.send(os.getpid())
        ready.close()  # unsent: the supervisor reads EOF, a failed start
        await task

    try:
        asyncio.run(run())
    except (OSError, StartupError) as exc:
        logging.getLogger("railyard").error("worker cannot start: %s", exc)
        raise SystemExit(1) from None


@dataclass
class _Slot:
    """One worker's place: its process now, and its restarts."""

    number: int
    process: BaseProcess | None = None
    ready: Connection | None = None
    started: float = 0.0
    failures: int = 0
    restart_at: float | None = None


class Supervisor:
    """Starts, watches and stops ``count`` workers serving ``settings``."""

    def __init__(self, settings: Settings, count: int) -> None:
        self.settings = settings
        self.count = count
        self.context = multiprocessing.get_context("spawn")
        self.slots = [_Slot(n) for n in range(count)]
        self.stopping = False

    def _start(self, slot: _Slot) -> None:
        receive, send = self.context.Pipe(duplex=False)
        process = self.context.Process(
            target=_worker,
            args=(self.settings, os.getpid(), send),
            name=f"railyard-worker-{slot.number}",
        )
        process.start()
        send.close()
        slot.process, slot.ready, slot.started, slot.restart_at = (
            process,
            receive,
            time.monotonic(),
            None,
        )

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if not self.stopping:
            log.info("%s: stopping %d workers", signal.Signals(signum).name, self.count)
        self.stopping = True

    def _processes(self) -> list[BaseProcess]:
        return [s.process for s in self.slots if s.process is not None]

    def _first_start(self) -> bool:
        """Every worker started and ready; False if one failed (then all are stopped)."""
        for slot in self.slots:
            self._start(slot)
        deadline = time.monotonic() + START_TIMEOUT
        waiting = {slot.number: slot for slot in self.slots}
        while waiting and not self.stopping:
            if time.monotonic() > deadline:
                log.error("workers not ready within %g s", START_TIMEOUT)
                return False
            for slot in list(waiting.values()):
                assert slot.ready is not None
                assert slot.process is not None
                if slot.ready.poll():
                    try:
                        slot.ready.recv()
                    except EOFError:  # it exited before it was ready
                        slot.process.join()
                        log.error(
                            "worker %d exited at its start (%s): stopping",
                            slot.number,
                            _how(slot.process.exitcode),
                        )
                        return False
                    slot.ready.close()
                    slot.ready = None
                    del waiting[slot.number]
            time.sleep(0.02)
        return True  # (or a signal came first: _watch then returns at once)

    def _stop_all(self) -> None:
        """SIGTERM to every worker; wait for them (killed past STOP_TIMEOUT)."""
        for process in self._processes():
            if process.exitcode is None:
                process.terminate()
        deadline = time.monotonic() + STOP_TIMEOUT
        for process in self._processes():
            process.join(max(0.0, deadline - time.monotonic()))
            if process.exitcode is None:
                log.error(
                    "worker pid %s still running %g s after SIGTERM: killed",
                    process.pid,
                    STOP_TIMEOUT,
                )
                process.kill()
                process.join()

    def _watch(self) -> None:
        """Restart workers that die, until a signal asks to stop."""
        while not self.stopping:
            now = time.monotonic()
            for slot in self.slots:
                if slot.restart_at is not None and now >= slot.restart_at:
                    self._start(slot)
                    assert slot.process is not None
                    log.info("worker %d restarted: pid %s", slot.number, slot.process.pid)
            # Until a worker exits, a signal arrives, or a restart may be due.
            sentinels = [s.process.sentinel for s in self.slots if s.process is not None]
            if sentinels:
                wait(sentinels, timeout=0.2)
            else:
                time.sleep(0.2)
            for slot in self.slots:
                process = slot.process
                if process is None or process.exitcode is None or self.stopping:
                    continue
                process.join()
                ran = time.monotonic() - slot.started
                slot.failures = 0 if ran >= STEADY else slot.failures + 1
                delay = min(MAX_BACKOFF, FIRST_BACKOFF * 2 ** max(0, slot.failures - 1))
                log.error(
                    "worker %d (pid %s) died after %.1f s (%s): restarting in %g s",
                    slot.number,
                    process.pid,
                    ran,
                    _how(process.exitcode),
                    delay,
                )
                if slot.ready is not None:
                    slot.ready.close()
                slot.process, slot.ready = None, None
                slot.restart_at = time.monotonic() + delay

    def run(self) -> int:
        """Serve until SIGTERM/SIGINT; the exit status."""
        from service.ops.serve import where_to_go

        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._on_signal)
        if not self._first_start():
            self._stop_all()
            return 1
        host = self.settings.host
        if not self.stopping:
            log.info(
                "serving gRPC on %s:%d and HTTP on %s:%d with %d workers (pids %s)",
                host,
                self.settings.grpc_port,
                host,
                self.settings.http_port,
                self.count,
                ", ".join(str(p.pid) for p in self._processes()),
            )
            log.info(
                "%s",
                where_to_go(
                    host,
                    self.settings.http_port,
                    self.settings.grpc_port,
                    tls=bool(self.settings.tls_cert),
                ),
            )
        self._watch()
        self._stop_all()
        codes = [p.exitcode for p in self._processes()]
        log.info("stopped: %d workers (exit codes %s)", self.count, codes)
        return 0 if all(code == 0 for code in codes) else 1


def _how(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        return f"signal {signal.Signals(-exitcode).name}"
    return f"exit code {exitcode}"


def supervise(settings: Settings, count: int) -> int:
    """Run ``count`` workers of ``settings`` on shared ports; the exit status.
    StartupError for a port that is taken or caps that do not fit."""
    from service.ops.serve import raise_descriptor_limit

    # Raised here, the limit is every worker's (children inherit it), and caps
    # that cannot fit are one line before any worker starts.
    raise_descriptor_limit(settings)
    grpc_held = _hold(settings.host, settings.grpc_port, "gRPC", "--grpc-port")
    try:
        http_held = _hold(settings.host, settings.http_port, "HTTP", "--http-port")
    except Exception:
        grpc_held.close()
        raise
    with grpc_held, http_held:
        # Each worker's bot pool gets its share of the CPUs (one per CPU each
        # would be N x N processes for N CPUs).
        bots = settings.bot_processes
        if bots is None:
            bots = max(1, cpu_count() // count)
        shared = settings.model_copy(
            update={
                "workers": count,
                "grpc_port": grpc_held.getsockname()[1],
                "http_port": http_held.getsockname()[1],
                "bot_processes": bots,
            }
        )
        return Supervisor(shared, count).run()
