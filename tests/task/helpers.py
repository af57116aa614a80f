"""Shared pieces of the task-record tests: a pin without a config file, records by number."""

from __future__ import annotations

import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

from nisse_llm.config.settings import Pin, load_settings
from nisse_llm.events.canonical import CallInfo, Usage
from nisse_llm.task.records import CallRecord

TOKEN = "sk-task-record-0123456789"
#: Where every test pin points (the operator's base URL a resume must be given).
BASE_URL = "http://127.0.0.1:4000"
ROLES = {
    "executor": "gpt-4.1-mini",
    "planner": "claude-sonnet-4-5",
    "delegate": "claude-sonnet-4-5",
    "consultant": "gpt-4.1-mini",
}


def make_pin(base_url: str = BASE_URL, **roles: Any) -> Pin:
    """A pin from explicit arguments alone (no TOML, no environment needed)."""
    return load_settings(
        None, llm={"base_url": base_url, "token": TOKEN}, roles={**ROLES, **roles}
    ).pin()


def call_record(n: int) -> CallRecord:
    """Call record number ``n``: usage, cost and role are a function of ``n`` alone.

    Every fifth call has no known cost, so totals must count unpriced calls too.
    """
    role = ("executor", "planner", "delegate")[n % 3]
    priced = n % 5 != 0
    return CallRecord(
        role=role,
        model=ROLES[role],
        route="anthropic_messages" if role != "executor" else "openai_chat",
        usage=Usage(input=100 + n, output=n % 50, cache_read=n % 7, cache_write=n % 3),
        call=CallInfo(
            call_id=f"chatcmpl-{n}",
            cost_usd=Decimal(f"0.000{n % 97 + 1:03d}") if priced else None,
            cost_source="proxy" if priced else None,
        ),
        outcome="ok" if n % 11 else "UpstreamUnavailable",
    )


def task_cli(*args: str, status: int = 0, env: dict[str, str] | None = None) -> str:
    """``nisse-llm task ARGS`` in another process, with no NISSE_* or PG* variable but those
    of ``env``: its standard output, the exit ``status`` checked and no traceback; on a
    refusal (a nonzero ``status``) its standard error."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("NISSE_", "PG"))}
    done = subprocess.run(
        [sys.executable, "-m", "nisse_llm", "task", *args],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        env={**base, **(env or {})},
        check=False,
        timeout=120,
    )
    assert done.returncode == status, done.stderr
    assert "Traceback" not in done.stderr
    return done.stdout if status == 0 else done.stderr
