"""The ranges of the clients' numeric keywords, checked when a client or router is built.

The same ranges as the TOML keys they mirror (`nisse_llm.config.settings`), so ``timeout_s=-1`` or
``nan`` passed to a constructor gets a `ConfigError` naming the keyword and the range,
never httpx's "Timeout value out of range" from deep inside. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from nisse_llm.errors import ConfigError

__all__ = ["MAX_SECONDS", "check_client_numbers"]

#: Longest wait, timeout or deadline accepted: beyond an hour a value is a typo.
MAX_SECONDS = 3600.0


@dataclass(frozen=True, slots=True)
class _Range:
    """A keyword's range: ``low`` (exclusive unless ``low_included``) to ``high``."""

    key: str  # the TOML key taking the same range
    low: float
    high: float
    low_included: bool
    whole: bool
    unit: str
    example: str

    def problem(self, value: object) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            kind = "a whole number" if self.whole else "a number"
            return f"must be {kind}, got {type(value).__name__}"
        if self.whole and not isinstance(value, int):
            return "must be a whole number"
        if not math.isfinite(value):
            return f"must be a finite number of {self.unit}"
        above = value >= self.low if self.low_included else value > self.low
        if above and value <= self.high:
            return None
        low, high = _shown(self.low), _shown(self.high)
        if self.low_included:
            return f"must be {low} to {high} {self.unit}"
        return f"must be above {low} and at most {high} {self.unit}"


def _shown(number: float) -> str:
    """A bound as written in the docs: ``3600``, ``1000000``, never ``1e+06``."""
    return str(int(number)) if number == int(number) else str(number)


def _seconds(key: str, example: str) -> _Range:
    return _Range(key, 0.0, MAX_SECONDS, False, False, "seconds", example)


def _wait(key: str, example: str) -> _Range:
    return _Range(key, 0.0, MAX_SECONDS, True, False, "seconds", example)


_RANGES: Mapping[str, _Range] = {
    "timeout_s": _seconds("llm.timeout_s", "120"),
    "connect_timeout_s": _seconds("llm.connect_timeout_s", "10"),
    "stream_idle_timeout_s": _seconds("llm.stream_idle_timeout_s", "120"),
    "call_deadline_s": _seconds("llm.call_deadline_s", "600"),
    "stream_deadline_s": _seconds("llm.stream_deadline_s", "3600"),
    "rate_limit_wait_s": _wait("llm.rate_limit_wait_s", "20"),
    "rate_limit_wait_cap_s": _wait("llm.rate_limit_wait_cap_s", "60"),
    "rate_limit_retries": _Range("llm.rate_limit_retries", 0, 10, True, True, "retries", "1"),
    "max_tokens": _Range("llm.max_output_tokens", 1, 1_000_000, True, True, "tokens", "16384"),
    "max_response_bytes": _Range(
        "llm.max_response_bytes", 1024, 4 * 1024**3, True, True, "bytes", "67108864"
    ),
}


def check_client_numbers(owner: str, values: Mapping[str, object]) -> None:
    """`ConfigError` listing each keyword of ``values`` outside its range (``None`` is
    "the default" and passes); ``owner`` names the constructor in the message."""
    problems = []
    for keyword, value in values.items():
        bound = _RANGES.get(keyword)
        if bound is None or value is None:
            continue
        problem = bound.problem(value)
        if problem is not None:
            problems.append(
                f"{owner}({keyword}={value!r}): {problem} (the range of {bound.key} in the "
                f"TOML); pass, for example, {keyword}={bound.example}"
            )
    wait, cap = values.get("rate_limit_wait_s"), values.get("rate_limit_wait_cap_s")
    if (
        not problems
        and isinstance(wait, int | float)
        and isinstance(cap, int | float)
        and wait > cap
    ):
        problems.append(
            f"{owner}(rate_limit_wait_s={wait!r}, rate_limit_wait_cap_s={cap!r}): the "
            "wait exceeds the cap; the wait must lie within the cap"
        )
    if problems:
        noun = "value" if len(problems) == 1 else "values"
        raise ConfigError(
            f"invalid {noun} for {owner}:\n" + "\n".join(f"  - {p}" for p in problems),
            problems=tuple(problems),
        )
