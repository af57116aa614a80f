"""One hostile configuration file loaded in its own process, measured.

Run as ``python -m tests.reliability._hostile_files CASE DIR``: builds the file in DIR and
prints one JSON object: the outcome (``ok`` or the `LLMError` class raised; anything
else escapes and fails the process), the message, the seconds the load took and the peak
memory it added (Linux ``VmHWM``, reset just before the load).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from nisse_llm.config.settings import load_settings
from nisse_llm.errors import LLMError

DEPTH = 100_000
ROLES = '[roles]\nexecutor = "a"\nplanner = "b"\ndelegate = "c"\nconsultant = "d"\n'
LLM = '[llm]\nbase_url = "http://127.0.0.1:4000"\n'


def build(name: str, directory: Path) -> Path:
    """The hostile file (or special file) of case ``name``."""
    path = directory / f"{name}.toml"
    if name == "deep_arrays":
        path.write_text("a = " + "[" * DEPTH + "]" * DEPTH + "\n")
    elif name == "deep_tables":
        path.write_text("a = " + "{b = " * DEPTH + "1" + "}" * DEPTH + "\n")
    elif name == "deep_dotted_key":
        path.write_text(".".join(["k"] * DEPTH) + " = 1\n")
    elif name == "deep_arrays_in_64k":
        path.write_text("a = " + "[" * 20_000 + "]" * 20_000 + "\n")
    elif name == "deep_arrays_one_per_line":
        path.write_text("a = " + "[\n" * 16_000 + "]\n" * 16_000)
    elif name == "deep_dotted_key_in_64k":
        path.write_text(".".join(["k"] * 20_000) + " = 1\n")
    elif name == "many_deep_headers":
        stem = "[" + ".".join(["k"] * 255)
        path.write_text("".join(f"{stem}.t{i}]\n" for i in range(60_000 // (len(stem) + 8))))
    elif name == "huge_integer":
        path.write_text(LLM + "max_output_tokens = " + "9" * 5000 + "\n" + ROLES)
    elif name == "oversized":
        path.write_text(LLM + ROLES + "# padding\n" * 300_000)
    elif name == "dev_zero":
        return Path("/dev/zero")
    elif name == "fifo":
        os.mkfifo(path)
    elif name == "unparseable_url":
        path.write_text('[llm]\nbase_url = "http://[::1"\n' + ROLES)
    elif name == "userinfo_url":
        path.write_text('[llm]\nbase_url = "http://u:hunter22@127.0.0.1:4000"\n' + ROLES)
    elif name == "control_in_url":
        path.write_text(
            '[llm]\nbase_url = "http://127.0.0.1:4000/\\u001b]0;owned\\u0007"\n' + ROLES
        )
    else:
        raise SystemExit(f"unknown case {name!r}")
    if path.exists() and path.is_file():
        path.chmod(0o600)
    return path


CASES = (
    "deep_arrays",
    "deep_tables",
    "deep_dotted_key",
    "deep_arrays_in_64k",
    "deep_arrays_one_per_line",
    "deep_dotted_key_in_64k",
    "many_deep_headers",
    "huge_integer",
    "oversized",
    "dev_zero",
    "fifo",
    "unparseable_url",
    "userinfo_url",
    "control_in_url",
)


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def main(name: str, directory: str) -> None:
    path = build(name, Path(directory))
    os.environ["NISSE_LLM_TOKEN"] = "sk-hostile-files-0000"
    Path("/proc/self/clear_refs").write_text("5")
    before = _status_mb("VmRSS")
    start = time.perf_counter()
    try:
        load_settings(path)
        outcome, message = "ok", ""
    except LLMError as exc:
        outcome, message = type(exc).__name__, str(exc)[:600]
    seconds = time.perf_counter() - start
    report = {
        "case": name,
        "outcome": outcome,
        "message": message,
        "seconds": round(seconds, 3),
        "growth_mb": round(_status_mb("VmHWM") - before, 1),
        "path": str(path),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
