"""Shared pieces of the task-record tests: a pin without a config file, records by number."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from nisse_llm.config.settings import Pin, load_settings
from nisse_llm.log.canonical import CallInfo, Usage
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
