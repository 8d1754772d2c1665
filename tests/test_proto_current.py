"""The committed generated code is what scripts/gen-proto writes from the
.proto files, and the .proto files pass buf lint."""

from __future__ import annotations

import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from tests.lockfile import locked_pins, pinned_version

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
GENERATED_DIR = ROOT / "api" / "python" / "railyard_api"
GENERATED = (
    "game_service_pb2.py",
    "game_service_pb2.pyi",
    "game_service_pb2_grpc.py",
    "game_service_pb2_grpc.pyi",
)


def test_generated_code_is_current(tmp_path: Path) -> None:
    # The committed code is what the locked generators write: with others it
    # differs (GRPC_GENERATED_VERSION, the protobuf gencode version).
    pins = locked_pins()
    for generator in ("grpcio-tools", "mypy-protobuf"):
        installed, locked = metadata.version(generator), pinned_version(pins[generator])
        assert installed == locked, f"the venv has {generator} {installed}, the lock {locked}"
    out = tmp_path / "api"
    subprocess.run(
        [str(ROOT / "scripts" / "gen-proto"), str(out)],
        cwd=ROOT,
        env={"BIN": str(BIN), "PATH": f"{BIN}:/usr/bin:/bin"},
        check=True,
        capture_output=True,
    )
    stale = [
        name
        for name in GENERATED
        if (out / name).read_bytes()
        != (ROOT / "api" / "python" / "railyard_api" / name).read_bytes()
    ]
    assert stale == [], f"run scripts/gen-proto: {stale} differ from the .proto files"


def test_buf_lint_is_clean() -> None:
    buf = shutil.which("buf", path=str(BIN))
    # A dev dependency (buf-bin, locked): fail, naming it, rather than skip.
    assert buf is not None, f"buf is not in {BIN}: install the dev dependencies (make)"
    result = subprocess.run([buf, "lint"], cwd=ROOT / "proto", capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
