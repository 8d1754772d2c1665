"""A real, throw-away ``redis-server`` for the tests.

:class:`RedisServer` runs one on a free loopback port, without persistence,
in a temporary directory, and can stop, kill, freeze and restart it on the
same port (to test a store through Redis dying and coming back). Every
server started here is stopped at teardown, and at interpreter exit at the
latest. Only the standard library is used, so the harness does not depend on
the client under test.
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

INSTALL_HINT = "redis-server is not installed: run ./scripts/install-redis (or `make unit`)"

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

    def __init__(self, *extra_args: str, start: bool = True) -> None:
        executable = shutil.which("redis-server")
        if executable is None:
            raise RuntimeError(INSTALL_HINT)
        self.executable = executable
        self.extra_args = extra_args
        self.dir = Path(tempfile.mkdtemp(prefix="railyard-redis-"))
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
