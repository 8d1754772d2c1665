"""requirements.lock agrees with pyproject.toml, and the running venv is the lock.

scripts/bootstrap installs exactly the lock (hash-checked), so the lock must
pin every requirement of pyproject.toml within its bounds (else `make lock`
was not run after pyproject changed), and a venv that is not the lock (a
stale one, or one installed by hand) is not what CI tests.
"""

from __future__ import annotations

from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.lockfile import LOCK, ROOT, locked_pins, pinned_version, project_requirements


def test_every_project_requirement_is_pinned_within_its_bounds() -> None:
    pins = locked_pins()
    wrong = []
    for requirement in project_requirements():
        pin = pins.get(canonicalize_name(requirement.name))
        if pin is None:
            wrong.append(f"{requirement}: not in requirements.lock")
        elif not requirement.specifier.contains(pinned_version(pin), prereleases=True):
            wrong.append(f"{requirement}: the lock pins {pinned_version(pin)}")
    assert wrong == [], "run make lock: " + "; ".join(wrong)


def test_extras_of_project_requirements_are_pinned_within_their_bounds() -> None:
    # uvicorn[standard] brings httptools, which service/transports/http/limits.py needs.
    pins = locked_pins()
    wrong = []
    for requirement in project_requirements():
        for extra in sorted(requirement.extras):
            for text in metadata.requires(requirement.name) or []:
                needed = Requirement(text)
                if needed.marker is None or not needed.marker.evaluate({"extra": extra}):
                    continue  # not part of this extra, or not on this platform
                pin = pins.get(canonicalize_name(needed.name))
                if pin is None:
                    wrong.append(f"{requirement.name}[{extra}] needs {needed}: not locked")
                elif not needed.specifier.contains(pinned_version(pin), prereleases=True):
                    wrong.append(f"{requirement.name}[{extra}] needs {needed}: locked {pin}")
    assert wrong == [], "run make lock: " + "; ".join(wrong)


def test_the_venv_has_the_locked_versions() -> None:
    pins = locked_pins()
    stale = []
    for requirement in project_requirements():
        pin = pins[canonicalize_name(requirement.name)]
        if pin.marker is not None and not pin.marker.evaluate():
            continue  # locked for another platform or Python
        try:
            installed = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            installed = "none"
        if installed != pinned_version(pin):
            stale.append(f"{requirement.name} {installed}, locked {pinned_version(pin)}")
    assert stale == [], "rerun scripts/bootstrap (the venv is not the lock): " + "; ".join(stale)


def test_the_image_builds_from_the_locked_pins() -> None:
    """The Dockerfile resolved from pyproject.toml alone; it now takes
    scripts/lock-constraints' output as pip constraints: every locked pin,
    with its marker, and no hash (constraints take none)."""
    import subprocess
    import sys

    printed = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "lock-constraints"), str(LOCK)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    constraints = {canonicalize_name(Requirement(line).name): Requirement(line) for line in printed}
    pins = locked_pins()
    assert set(constraints) == set(pins)
    for name, pin in pins.items():
        assert str(constraints[name]) == str(pin)
    assert "--hash" not in "\n".join(printed)
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "scripts/lock-constraints > constraints.txt" in dockerfile
    assert "--constraint constraints.txt" in dockerfile
