"""The benchmarks are code: each runs here at its smallest size, so that a
change that breaks one is seen at once (bench/service_floor.py went broken
for a while, calling a helper whose signature had changed). The figures are
not checked: a smoke run on a shared machine measures nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_bench(*args: str, timeout: float = 240, verdicts: bool = False) -> str:
    """The benchmark's output; it must exit 0 (``verdicts``: or 1, a target
    missed, which a smoke run on a loaded machine may well do)."""
    done = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    allowed = (0, 1) if verdicts else (0,)
    assert done.returncode in allowed, (
        f"{args}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    )
    return done.stdout


def test_engine_benchmark_runs() -> None:
    out = run_bench("bench/engine.py", "--rounds", "1")
    assert "rounds/s" in out


def test_service_benchmark_runs_against_its_floor() -> None:
    """gRPC only: the HTTP side needs wrk, which make bench-service brings."""
    out = run_bench(
        "bench/service.py",
        "--seconds",
        "0.5",
        "--repeat",
        "1",
        "--clients",
        "2",
        "--transport",
        "grpc",
        "--wait-quiet",
        "0",
        "--client-procs",
        "1",
        "--no-pin",
        verdicts=True,
    )
    assert "grpc floor:" in out
    assert "verdict" in out
    assert "errors 0" in out


def test_watchers_benchmark_runs() -> None:
    out = run_bench(
        "bench/watchers.py",
        "--watchers",
        "10",
        "--games",
        "2",
        "--moves",
        "2",
        "--transport",
        "http",
    )
    assert '"watchers_complete_in_order": 10' in out


def test_tracing_benchmark_runs() -> None:
    out = run_bench("bench/tracing.py", "--turns", "5", "--repeat", "2")
    assert "tracing off" in out
    assert "tracing on" in out
    assert "on/off:" in out


def test_background_benchmark_runs() -> None:
    """Two one-round games of an expert and three greedy bots, played by the
    background player; the summary's lines are there."""
    out = run_bench("bench/background.py", "--games", "2", "--rounds", "1", "--parallel", "2")
    assert "2 games x 1 rounds" in out
    assert "rounds won: expert" in out
