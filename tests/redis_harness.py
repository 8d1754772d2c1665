"""A real, throw-away ``redis-server`` for the tests.

:class:`RedisServer` runs one on a free loopback port, without persistence,
in a temporary directory, and can stop, kill, freeze and restart it on the
same port (to test a store through Redis dying and coming back);
:class:`RedisCluster` forms a Redis Cluster of several; :class:`RedisSentinels`
runs a master, a replica and a sentinel watching them. Every server started
here is stopped at teardown, and at interpreter exit at the latest.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

INSTALL_HINT = "redis-server is not installed: run ./scripts/install-redis (or `make unit`)"

SLOTS = 16384
_servers: set[RedisServer] = set()  # strong refs: atexit must reach every one


@atexit.register
def _stop_all() -> None:
    for server in list(_servers):
        server.close()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _encode(*args: str) -> bytes:
    out = [f"*{len(args)}\r\n".encode()]
    for arg in args:
        data = arg.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


class RedisServer:
    """One ``redis-server`` process on ``127.0.0.1:<port>``; started on creation."""

    def __init__(self, *extra_args: str, start: bool = True, config: str | None = None) -> None:
        executable = shutil.which("redis-server")
        if executable is None:
            raise RuntimeError(INSTALL_HINT)
        self.executable = executable
        self.extra_args = extra_args
        self.dir = Path(tempfile.mkdtemp(prefix="railyard-redis-"))
        # A config file, when given, comes first (a sentinel needs one: it
        # writes what it learns there, and reads it back on a restart).
        self.config: Path | None = None
        if config is not None:
            self.config = self.dir / "redis.conf"
            self.config.write_text(config)
        self.port = _free_port()
        self._proc: subprocess.Popen[bytes] | None = None
        self._closed = False
        _servers.add(self)
        if start:
            try:
                self.start()
            except BaseException:
                self.close()
                raise

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self, timeout: float = 10.0) -> None:
        """Start (again, on the same port); returns once it answers PING."""
        if self._closed:
            raise RuntimeError("this RedisServer is closed")
        if self.running:
            return
        first = self._proc is None
        for _attempt in range(5):
            if self._launch(timeout):
                return
            if not first:
                break
            self.port = _free_port()  # lost the race for the port: pick another
        raise RuntimeError(f"redis-server did not start on port {self.port}:\n{self.log()}")

    def _launch(self, timeout: float) -> bool:
        args = [
            self.executable,
            *([str(self.config)] if self.config is not None else []),
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self.dir),
            "--daemonize",
            "no",
            "--logfile",
            str(self.dir / "redis.log"),
            *self.extra_args,
        ]
        self._proc = subprocess.Popen(
            args,
            cwd=self.dir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                return False
            with contextlib.suppress(OSError):
                if self.command("PING", timeout=0.5) == b"+PONG":
                    return True
            time.sleep(0.02)
        self._terminate(signal.SIGKILL)
        return False

    def command(self, *args: str, timeout: float = 2.0) -> bytes:
        """Send one command; the first line of the reply (enough for the tests)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as sock:
            sock.sendall(_encode(*args))
            data = b""
            while not data.endswith(b"\r\n"):
                chunk = sock.recv(65536)
                if not chunk:
                    raise ConnectionError("redis-server closed the connection")
                data += chunk
            return data.split(b"\r\n", 1)[0]

    def flushall(self) -> None:
        if self.command("FLUSHALL") != b"+OK":
            raise RuntimeError("FLUSHALL failed")

    def _terminate(self, sig: signal.Signals) -> None:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        if sig != signal.SIGKILL:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGCONT)  # a frozen server cannot exit
        proc.send_signal(sig)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)

    def stop(self) -> None:
        """A clean shutdown (SIGTERM)."""
        self._terminate(signal.SIGTERM)

    def kill(self) -> None:
        """Redis dies (SIGKILL): connections reset, the port refuses."""
        self._terminate(signal.SIGKILL)

    def freeze(self) -> None:
        """Redis hangs (SIGSTOP): connections open, nothing answers."""
        if self.running and self._proc is not None:
            self._proc.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        if self.running and self._proc is not None:
            self._proc.send_signal(signal.SIGCONT)

    def log(self) -> str:
        try:
            return (self.dir / "redis.log").read_text(errors="replace")[-4000:]
        except OSError:
            return "(no log)"

    def close(self) -> None:
        """Stop it for good and remove its directory."""
        if self._closed:
            return
        self._closed = True
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)
        _servers.discard(self)

    def __enter__(self) -> RedisServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RedisCluster:
    """A Redis Cluster of ``masters`` real ``redis-server`` nodes (no
    replicas) on free loopback ports, the 16384 slots split evenly between
    them; started on creation. Its :attr:`url` is the first node, as an
    operator would give one seed node of a cluster.

    Set up and inspected with redis-py's synchronous client, which the store
    no longer uses (it has its own client, :mod:`service.store.resp`).
    """

    def __init__(self, masters: int = 3, timeout: float = 20.0) -> None:
        self.nodes: list[RedisServer] = []
        self.bus_ports: list[int] = []
        try:
            for _ in range(masters):
                self.bus_ports.append(_free_port())
                self.nodes.append(
                    RedisServer(
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        "nodes.conf",
                        # The bus port defaults to port + 10000, which may be
                        # taken or out of range: give it a free one.
                        "--cluster-port",
                        str(self.bus_ports[-1]),
                        "--cluster-node-timeout",
                        "2000",
                        # A node down takes its own slots with it, not the rest.
                        "--cluster-require-full-coverage",
                        "no",
                        # Keys survive a clean stop + start (SIGTERM writes the AOF).
                        "--appendonly",
                        "yes",
                    )
                )
            self._form(timeout)
        except BaseException:
            self.close()
            raise

    def client(self, node: int) -> Any:
        import redis

        return redis.Redis(port=self.nodes[node].port, socket_timeout=5)

    def node_id(self, node: int) -> str:
        with self.client(node) as client:
            return str(client.execute_command("CLUSTER", "MYID").decode())

    def _form(self, timeout: float) -> None:
        count = len(self.nodes)
        bounds = [SLOTS * i // count for i in range(count + 1)]
        for i in range(count):
            with self.client(i) as client:
                client.execute_command("CLUSTER", "ADDSLOTSRANGE", bounds[i], bounds[i + 1] - 1)
                if i:
                    client.execute_command(
                        "CLUSTER", "MEET", "127.0.0.1", self.nodes[0].port, self.bus_ports[0]
                    )
        self.wait_ok(timeout)

    def wait_ok(self, timeout: float = 20.0) -> None:
        """Until every running node sees every slot served by a known master."""
        deadline = time.monotonic() + timeout
        for i, node in enumerate(self.nodes):
            if not node.running:
                continue
            with self.client(i) as client:
                while True:
                    info = client.execute_command("CLUSTER", "INFO")
                    slots = client.execute_command("CLUSTER", "SLOTS")
                    covered = sum(int(s[1]) - int(s[0]) + 1 for s in slots)
                    if b"cluster_state:ok" in info and covered == SLOTS:
                        known = {int(s[2][1]) for s in slots}
                        if known == {n.port for n in self.nodes if n.running} or len(known) == len(
                            self.nodes
                        ):
                            break
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"the cluster did not form:\n{info.decode()}")
                    time.sleep(0.05)

    @property
    def url(self) -> str:
        return self.nodes[0].url

    def owner(self, slot: int) -> int:
        """The index of the node serving ``slot``."""
        with self.client(0) as client:
            for start, end, master, *_ in client.execute_command("CLUSTER", "SLOTS"):
                if int(start) <= slot <= int(end):
                    return next(i for i, n in enumerate(self.nodes) if n.port == int(master[1]))
        raise LookupError(f"slot {slot} is not served")

    def begin_migration(self, slot: int, target: int) -> int:
        """Mark ``slot`` MIGRATING from its owner to ``target`` (IMPORTING); the
        owner's index. Keys still on the owner are served there; keys already
        moved are answered with ASK."""
        source = self.owner(slot)
        with self.client(target) as dst:
            dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", self.node_id(source))
        with self.client(source) as src:
            src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", self.node_id(target))
        return source

    def move_keys(self, slot: int, source: int, target: int) -> int:
        """MIGRATE the keys of ``slot`` still on ``source`` to ``target``; how many."""
        with self.client(source) as src:
            keys = src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 10_000)
            if keys:
                port = self.nodes[target].port
                src.execute_command("MIGRATE", "127.0.0.1", port, "", 0, 5000, "KEYS", *keys)
        return len(keys)

    def end_migration(self, slot: int, target: int) -> None:
        """Give ``slot`` to ``target`` on every node: from now on MOVED."""
        owner = self.node_id(target)
        for i, node in enumerate(self.nodes):
            if node.running:
                with self.client(i) as client:
                    client.execute_command("CLUSTER", "SETSLOT", slot, "NODE", owner)

    def migrate(self, slot: int, target: int) -> None:
        """Move ``slot`` and its keys to node ``target`` (a resharding step)."""
        source = self.begin_migration(slot, target)
        self.move_keys(slot, source, target)
        self.end_migration(slot, target)

    def flushall(self) -> None:
        for node in self.nodes:
            if node.running:
                node.flushall()

    def close(self) -> None:
        for node in self.nodes:
            node.close()

    def __enter__(self) -> RedisCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RedisSentinels:
    """A master, a replica of it, and one sentinel that monitors them as
    ``name`` (quorum 1) and promotes the replica one second after the master
    stops answering."""

    def __init__(self, name: str = "railyard", down_after_ms: int = 1000) -> None:
        self.name = name
        # Redis 7 waits 5 s before a diskless full sync, to batch replicas.
        quick = ("--repl-diskless-sync-delay", "0")
        self.master = RedisServer(*quick)
        self.replica = RedisServer(*quick, "--replicaof", "127.0.0.1", str(self.master.port))
        try:
            config = (
                f"sentinel monitor {name} 127.0.0.1 {self.master.port} 1\n"
                f"sentinel down-after-milliseconds {name} {down_after_ms}\n"
                f"sentinel failover-timeout {name} 3000\n"
            )
            self.sentinel = RedisServer("--sentinel", config=config)
            self.wait(self.replica_known, "the sentinel does not know the replica in sync")
            self.wait(self.replicated, "the replica did not sync")
        except BaseException:
            self.close()
            raise

    @property
    def url(self) -> str:
        return f"redis+sentinel://127.0.0.1:{self.sentinel.port}/{self.name}"

    def _sentinel(self) -> Any:
        from redis import Redis  # the tests' independent client

        return Redis(port=self.sentinel.port, socket_timeout=2, decode_responses=True)

    def replica_known(self) -> bool:
        """Whether the sentinel could promote the replica: connected to it,
        and seen in sync with the master (else FAILOVER says NOGOODSLAVE)."""
        replicas = self._sentinel().sentinel_slaves(self.name)
        return any(
            not r.get("is_disconnected") and r.get("master-link-status") == "ok" for r in replicas
        )

    def master_port(self) -> int:
        """The port of the master the sentinel names now."""
        _host, port = self._sentinel().sentinel_get_master_addr_by_name(self.name)
        return int(port)

    def role(self, server: RedisServer) -> str:
        from redis import Redis

        role: str = Redis(port=server.port, socket_timeout=2).execute_command("ROLE")[0].decode()
        return role

    def replicated(self) -> bool:
        """Whether every write the master took has reached the replica."""
        from redis import Redis

        master = Redis(port=self.master_port(), socket_timeout=2)
        return bool(master.execute_command("WAIT", 1, 1000) >= 1)

    @staticmethod
    def wait(condition: Any, failure: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(Exception):
                if condition():
                    return
            if time.monotonic() > deadline:
                raise TimeoutError(failure)
            time.sleep(0.05)

    def close(self) -> None:
        for server in ("sentinel", "replica", "master"):
            if hasattr(self, server):
                getattr(self, server).close()

    def __enter__(self) -> RedisSentinels:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
