"""The README's library example runs as written."""

from __future__ import annotations

import contextlib
import io
import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_example_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks, "the README has no python example"
    for block in blocks:
        with contextlib.redirect_stdout(io.StringIO()) as out:
            exec(compile(block, str(README), "exec"), {})
        assert "TilePlayed" in out.getvalue()


def test_readme_quick_start_runs_as_typed(tmp_path: Path, redis_url: str) -> None:
    """The shell quick start works pasted as it is, against a running
    service: it creates a game, lists the legal moves, plays one, watches."""
    import subprocess

    from tests.test_service_resilience import serve

    section = README.read_text().split("### The API in one minute", 1)[1]
    (script,) = re.findall(r"```sh\n(.*?)```", section, re.S)[:1]
    with serve(tmp_path, redis_url, "quickstart") as server:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            # python3 as the user has it: this interpreter's, then the system's.
            env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "API": server.base_url},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"events"' in done.stdout  # the ApplyMove answer
    assert "tilePlayed" in done.stdout or "tileDrawn" in done.stdout
    assert "data: " in done.stdout  # the SSE stream
