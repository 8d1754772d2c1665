"""grpcio's two servers side by side: server CPU per call for the same unary call.

    .venv/bin/python bench/grpc_transports.py [--pairs 5] [--seconds 5] [--clients 50] [--no-pin]

What each of grpcio's servers costs a call by itself: both answer
``/railyard.v1.GameService/ApplyMove`` with the same canned 1,500 bytes from
a coroutine on the event loop (one ``await asyncio.sleep(0)``, as a handler
awaiting the store would), and two processes of grpc.aio clients keep
``--clients`` calls in flight (a channel each), as ``bench/service.py``
plays the service. The figure is the server process's CPU (user + system,
all threads) over the calls answered in the window. The servers, both with
the service's channel arguments (``service.transports.grpc.server.channel_options``):

* ``aio``: grpc.aio's server, the handler a coroutine on its loop: what
  ``railyard serve`` runs;
* ``threaded``: grpc's threaded server, each call handed to the loop
  (``asyncio.run_coroutine_threadsafe``) and waited for on its pool thread.

Each pair measures both on fresh processes, the order alternated every pair
(the machine drifts); the ratio is aio over threaded, per pair, then its
median and range. The server is pinned to one CPU with ``taskset`` and the
client processes to the others, as ``bench/service.py`` pins its service
and load (``--no-pin`` to leave scheduling alone): unpinned, the threaded
server's pool threads share both cores with the clients, and its CPU a call
read more than twice what it reads pinned (0.376 ms against 0.145, in the
issue that added the pinning).
docs/adr/0002-grpc-on-grpcio.md records the readings.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

_HERE: Final = Path(__file__).resolve().parent
# Run as a script, bench/ comes first on sys.path, and bench/service.py would
# shadow the ``service`` package: put the repository root there instead.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

import argparse  # noqa: E402
import asyncio  # noqa: E402
import concurrent.futures  # noqa: E402
import multiprocessing  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from multiprocessing.queues import Queue  # noqa: E402
from typing import Any  # noqa: E402

import grpc  # noqa: E402

from bench.builds import ratio_line  # noqa: E402
from bench.service import Pinning, cpu_seconds, free_port, pinning  # noqa: E402

SERVICE: Final = "railyard.v1.GameService"
METHOD: Final = f"/{SERVICE}/ApplyMove"
ANSWER: Final = bytes(1500)
REQUEST: Final = bytes(60)
SERVERS: Final = ("aio", "threaded")


async def _answer(request: bytes, context: object) -> bytes:
    await asyncio.sleep(0)
    return ANSWER


def _identity(raw: bytes) -> bytes:
    return raw


def _grpc_handler(behavior: Any) -> grpc.GenericRpcHandler[bytes, bytes]:
    handler = grpc.unary_unary_rpc_method_handler(behavior)
    return grpc.method_handlers_generic_handler(SERVICE, {"ApplyMove": handler})


def _options() -> list[tuple[str, int]]:
    from service.settings import Settings
    from service.transports.grpc.server import channel_options

    return channel_options(Settings())


async def _serve_threaded(port: int) -> None:
    loop = asyncio.get_running_loop()

    def call(request: bytes, context: grpc.ServicerContext) -> bytes:
        return asyncio.run_coroutine_threadsafe(_answer(request, context), loop).result()

    server = grpc.server(concurrent.futures.ThreadPoolExecutor(64), options=_options())
    server.add_generic_rpc_handlers((_grpc_handler(call),))
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    await asyncio.Event().wait()


async def _serve_aio(port: int) -> None:
    server = grpc.aio.server(options=_options())
    server.add_generic_rpc_handlers((_grpc_handler(_answer),))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await server.wait_for_termination()


def serve(kind: str, port: int) -> None:
    serving = {"threaded": _serve_threaded, "aio": _serve_aio}[kind]
    asyncio.run(serving(port))


async def _clients(port: int, clients: int, seconds: float, start: Start) -> int:
    options = [("grpc.use_local_subchannel_pool", 1)]
    channels = [
        grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=options) for _ in range(clients)
    ]
    answered = 0
    try:
        for channel in channels:
            await asyncio.wait_for(channel.channel_ready(), 60)
        calls = [
            channel.unary_unary(METHOD, request_serializer=None, response_deserializer=None)
            for channel in channels
        ]
        # Connected: the measurement begins once every load process is (on a
        # busy machine spawning one and importing grpc takes seconds).
        start.ready.put(1)
        if not await asyncio.to_thread(start.go.wait, 120):
            raise RuntimeError("the measurement did not begin")
        begin = start.begin.value
        await asyncio.sleep(max(0.0, begin - time.time()))
        end = begin + seconds

        async def one(call: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes]) -> None:
            nonlocal answered
            metadata = (("authorization", "Bearer bench"),)
            while time.time() < end:
                await call(REQUEST, metadata=metadata, timeout=10)
                if begin <= time.time() < end:
                    answered += 1

        await asyncio.gather(*(one(call) for call in calls))
    finally:
        for channel in channels:
            await channel.close(None)
    return answered


@dataclass(frozen=True)
class Start:
    """How the load processes begin together: each says it is connected
    (``ready``), then waits for ``go``, then calls from ``begin`` (a time)."""

    ready: Queue[int]
    go: Any  # multiprocessing.Event (its type is a method's result)
    begin: Any  # multiprocessing.Value("d")


def _load(
    port: int,
    clients: int,
    seconds: float,
    start: Start,
    out: Queue[int],
    cpus: set[int] | None,
) -> None:
    if cpus is not None:
        os.sched_setaffinity(0, cpus)  # as ``taskset -c`` would (Pinning.other)
    out.put(asyncio.run(_clients(port, clients, seconds, start)))


@dataclass(frozen=True)
class Reading:
    calls: int
    cpu_s: float

    @property
    def ms_per_call(self) -> float:
        return 1000 * self.cpu_s / self.calls if self.calls else float("nan")


def measure(kind: str, clients: int, seconds: float, pin: Pinning, warmup: float = 1.0) -> Reading:
    """A fresh server of ``kind`` (pinned as ``pin`` says) under two load
    processes (pinned to the other CPUs); its CPU over the calls answered
    from ``warmup`` s on."""
    port = free_port()
    server = subprocess.Popen(
        [*pin.server, sys.executable, __file__, "--serve", kind, "--port", str(port)]
    )
    try:
        context = multiprocessing.get_context("spawn")
        out: Queue[int] = context.Queue()
        start = Start(context.Queue(), context.Event(), context.Value("d", 0.0))
        halves = (clients + 1) // 2, clients // 2
        loads = [
            context.Process(target=_load, args=(port, n, seconds, start, out, pin.other_cpus))
            for n in halves
            if n
        ]
        for load in loads:
            load.start()
        for _ in loads:
            start.ready.get(timeout=120)
        begin = time.time() + warmup
        start.begin.value = begin
        start.go.set()
        time.sleep(max(0.0, begin - time.time()))
        cpu0 = cpu_seconds(server.pid)
        time.sleep(seconds)
        cpu = cpu_seconds(server.pid) - cpu0
        calls = sum(out.get(timeout=60) for _ in loads)
        for load in loads:
            load.join(10)
        return Reading(calls, cpu)
    finally:
        server.terminate()
        server.wait(10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--no-pin", action="store_true", help="no taskset CPU pinning")
    parser.add_argument("--serve", choices=SERVERS, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve, args.port)
        return 0
    if args.pairs < 1 or args.clients < 1 or args.seconds <= 0:
        parser.error("--pairs and --clients must be at least 1, --seconds above 0")
    pin = pinning(not args.no_pin)
    if pin.server:
        pin.text = f"the server pinned to CPU {pin.server[-1]}, the clients to CPU {pin.other[-1]}"
    print(
        f"grpcio's servers, server CPU per call, {args.clients} clients, "
        f"{args.pairs} rotated rounds of {args.seconds:g} s ({os.cpu_count()} CPUs); {pin.text}"
    )
    readings: dict[str, list[Reading]] = {kind: [] for kind in SERVERS}
    for round_ in range(args.pairs):
        order = SERVERS if round_ % 2 == 0 else SERVERS[::-1]
        line = []
        for kind in order:
            reading = measure(kind, args.clients, args.seconds, pin)
            readings[kind].append(reading)
            line.append(
                f"{kind} {reading.ms_per_call:.3f} ms ({reading.calls / args.seconds:,.0f}/s)"
            )
        print(f"round {round_ + 1}: " + ", ".join(line))
    for kind in SERVERS:
        values = [r.ms_per_call for r in readings[kind]]
        print(
            f"{kind}: median {statistics.median(values):.3f} ms a call "
            f"(range {min(values):.3f}-{max(values):.3f})"
        )
    ratios = [
        a.ms_per_call / b.ms_per_call
        for a, b in zip(readings["aio"], readings["threaded"], strict=True)
    ]
    print(ratio_line("aio / threaded", ratios))
    return 0


if __name__ == "__main__":
    sys.exit(main())
