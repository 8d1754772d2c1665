"""requirements.lock and pyproject.toml's requirements, read for the tests."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"
PYPROJECT = ROOT / "pyproject.toml"


def locked_pins(lock: Path = LOCK) -> dict[NormalizedName, Requirement]:
    """Each package the lock pins, by its normalized name: ``name==version``
    with the lock's marker, if any.

    The lock is ``uv pip compile`` output: a pin starts a line, and its hashes
    and ``# via`` notes follow on indented lines.

    >>> pins = locked_pins()
    >>> str(pins["grpcio"].specifier).startswith("==")
    True
    """
    pins: dict[NormalizedName, Requirement] = {}
    lines = lock.read_text().splitlines()
    for number, line in enumerate(lines):
        if not line[:1].isalnum():
            continue
        pin = Requirement(line.removesuffix("\\").strip())
        hashed = number + 1 < len(lines) and lines[number + 1].lstrip().startswith("--hash=")
        assert hashed, f"{lock.name}:{number + 1}: {pin.name} has no hash (run make lock)"
        (spec,) = pin.specifier  # exactly one: ==version
        assert spec.operator == "==", f"{lock.name}:{number + 1}: {pin} is not an exact pin"
        pins[canonicalize_name(pin.name)] = pin
    return pins


def pinned_version(pin: Requirement) -> str:
    """The version of a ``name==version`` pin."""
    (spec,) = pin.specifier
    return spec.version


#: This repository's own distributions: scripts/bootstrap installs them from
#: their folders, and `make lock` leaves them out of the lock.
OURS: frozenset[NormalizedName] = frozenset(
    canonicalize_name(name)
    for name in ("railyard", "railyard-engine", "railyard-api", "railyard-client")
)


def project_requirements(pyproject: Path = PYPROJECT) -> list[Requirement]:
    """pyproject.toml's runtime dependencies and its dev extra, which
    scripts/bootstrap installs (through the lock), but for this repository's
    own packages (:data:`OURS`)."""
    project = tomllib.loads(pyproject.read_text())["project"]
    texts = [*project["dependencies"], *project.get("optional-dependencies", {}).get("dev", [])]
    found = [Requirement(text) for text in texts]
    return [r for r in found if canonicalize_name(r.name) not in OURS]
