"""Measurements that need fresh processes: import time and resident memory."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from typing import Any

# label -> import statement; the first two are the import target's numerator and base.
IMPORTS: dict[str, str] = {
    "nisse_llm": "import nisse_llm",
    "httpx, pydantic": "import httpx, pydantic",
    "nisse_llm + both clients": "from nisse_llm import LiteLLMClient, AnthropicPassthroughClient",
    # What an agent does first: a client and an event (the canonical models build then).
    "nisse_llm: a client and a first event": (
        "from nisse_llm import LiteLLMClient, UserText\nUserText(text='hi')"
    ),
    "httpx": "import httpx",
    "pydantic_settings": "import pydantic_settings",
    "openai": "import openai",
    "anthropic": "import anthropic",
    "litellm": "import litellm",
}

_TIMER = "import time\nt = time.perf_counter()\n{stmt}\nprint(time.perf_counter() - t)\n"


def _env() -> dict[str, str]:
    # LiteLLM otherwise fetches its price map over the network at import. Bytecode is
    # written (and read from the warm-up round on), as for an installed package: without
    # it nisse_llm, imported from the source tree, would be compiled in every process.
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


# First use, in a fresh process, timed in CPU seconds (steadier than wall time on a shared
# machine) from before the first import to after the reply is read: {base}, {body}, {headers}
# are filled in. The first is the target's numerator, the second its base.
FIRST_USE: dict[str, str] = {
    "nisse_llm: import, an event, a client, one request": (
        "from nisse_llm import LiteLLMClient, UserText\n"
        "events = [UserText(text='hi')]\n"
        "with LiteLLMClient({base!r}, 'sk-bench') as client:\n"
        "    client.complete(events, None, 'bench-model')\n"
    ),
    "httpx, pydantic: import, a client, one request": (
        "import json\nimport httpx, pydantic\n"
        "with httpx.Client() as http:\n"
        "    json.loads(http.post({base!r} + '/chat/completions', content={body!r},"
        " headers={headers!r}).content)\n"
    ),
    # The least any pydantic-model API pays: pydantic's model machinery, one model built.
    "the same + one pydantic model built and used": (
        "import json\nimport httpx, pydantic\nfrom pydantic import BaseModel\n"
        "class Event(BaseModel):\n    text: str\n"
        "Event(text='hi')\n"
        "with httpx.Client() as http:\n"
        "    json.loads(http.post({base!r} + '/chat/completions', content={body!r},"
        " headers={headers!r}).content)\n"
    ),
}
_CPU_TIMER = "import time\nt = time.process_time()\n{stmt}\nprint(time.process_time() - t)\n"


def first_use_times(base_url: str, *, rounds: int) -> dict[str, float | None]:
    """Median CPU seconds of each `FIRST_USE` program, fresh processes interleaved."""
    from nisse_llm import LiteLLMClient, UserText

    with LiteLLMClient(base_url, "sk-bench") as client:
        body = client._core.begin(
            client.call_params([UserText(text="hi")], None, "bench-model")
        ).body
        headers = dict(client._core.headers)
    programs = {
        label: _CPU_TIMER.format(stmt=stmt.format(base=base_url, body=body, headers=headers))
        for label, stmt in FIRST_USE.items()
    }
    labels = list(programs)
    samples: dict[str, list[float]] = {label: [] for label in labels}
    for r in range(rounds + 1):
        shift = r % len(labels)
        for label in labels[shift:] + labels[:shift]:
            proc = subprocess.run(
                [sys.executable, "-c", programs[label]],
                capture_output=True,
                text=True,
                env=_env(),
                check=False,
            )
            if proc.returncode != 0:
                raise RuntimeError(f"{label} failed: {proc.stderr.strip()[-500:]}")
            if r > 0:
                samples[label].append(float(proc.stdout.strip().splitlines()[-1]))
    return {label: statistics.median(values) for label, values in samples.items()}


def _import_once(stmt: str) -> float | None:
    proc = subprocess.run(
        [sys.executable, "-c", _TIMER.format(stmt=stmt)],
        capture_output=True,
        text=True,
        env=_env(),
        check=False,
    )
    if proc.returncode != 0:
        return None
    return float(proc.stdout.strip().splitlines()[-1])


def import_times(labels: list[str], *, rounds: int) -> dict[str, float | None]:
    """Median seconds per import statement, fresh processes interleaved round by round.

    A first round (discarded) warms the bytecode caches; an import that fails once is
    reported as None (not installed).
    """
    samples: dict[str, list[float]] = {label: [] for label in labels}
    missing: set[str] = set()
    for r in range(rounds + 1):
        shift = r % len(labels)
        for label in labels[shift:] + labels[:shift]:
            if label in missing:
                continue
            seconds = _import_once(IMPORTS[label])
            if seconds is None:
                missing.add(label)
            elif r > 0:
                samples[label].append(seconds)
    return {
        label: None if label in missing else statistics.median(samples[label]) for label in labels
    }


def memory(key: str, base_url: str, *, turns: int, calls: int, every: int = 0) -> dict[str, Any]:
    """Run `bench.memory` for one contender in a fresh process; its JSON, or an error."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.memory",
            key,
            base_url,
            f"--turns={turns}",
            f"--calls={calls}",
            f"--every={every}",
        ],
        capture_output=True,
        text=True,
        env=_env(),
        check=False,
    )
    if proc.returncode != 0:
        return {"key": key, "error": proc.stderr.strip().splitlines()[-1:] or ["failed"]}
    data: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return data


def pin_self() -> tuple[int | None, str]:
    """Pin this process to CPU 0 and the stub to the last CPU, when there are two or more."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None, "not pinned (one CPU)"
    try:
        os.sched_setaffinity(0, {cpus[0]})
    except OSError as exc:  # some sandboxes refuse affinity changes
        return None, f"not pinned ({exc})"
    return cpus[-1], f"client pinned to CPU {cpus[0]}, stub to CPU {cpus[-1]}"
