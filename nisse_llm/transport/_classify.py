"""Classify a non-2xx proxy reply: retry it, or raise which error (pure: no I/O, no httpx).

Order matters: a budget refusal is recognised first, at any status, so it is never
retried; then a refused token is `AuthenticationFailed`; then a 429 is retried (or not);
then a context-window refusal (by its wording, at any other status) is
`ContextWindowExceeded`; then 5xx/408 are the upstream's fault and every other status
is the request's.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, NamedTuple, TypedDict

from nisse_llm import defaults
from nisse_llm.errors import (
    AuthenticationFailed,
    BudgetExhausted,
    ContextWindowExceeded,
    LLMError,
    ModelNotServed,
    UpstreamUnavailable,
)

# The error-body models and the overflow wordings load with the first failure to read.
if TYPE_CHECKING:
    from nisse_llm.wire.errors import ErrorInfo

__all__ = [
    "BODY_LIMIT",
    "REDACTED",
    "RateLimitPolicy",
    "Retry",
    "classify_failure",
    "is_budget_refusal",
    "redact",
    "requested_wait_s",
    "unserved_model",
]

REDACTED = "[redacted]"
#: How much of a server's body an exception carries.
BODY_LIMIT = 500

# LiteLLM's budget refusals are templates, not a documented interface (litellm 1.108:
# router "No deployments available - crossed budget", BudgetExceededError "Budget has
# been exceeded!", auth "ExceededBudget: ...", model_max_budget_limiter "LiteLLM User:
# ..., exceeded budget for model=", max_budget_per_session "Session budget exceeded").
# Anchored at the message's start (after up to three "label: " or "label, " prefixes such
# as "Authentication Error, "), so a prompt quoted inside another error never matches.
# Compiled on first use (a failure): a client that never fails never pays for it.
_BUDGET_REFUSAL = (
    r"^(?:[\w.]+(?: [\w.]+)?[:,] +){0,3}"
    r"(?:no deployments available - crossed budget|budget has been exceeded|exceededbudget"
    r"|session budget exceeded|litellm (?:virtual key|user|end user|team|team member): "
    r".*?, exceeded budget for model=)"
)


@functools.cache
def _budget_refusal() -> re.Pattern[str]:
    return re.compile(_BUDGET_REFUSAL, re.IGNORECASE)


_BUDGET_TYPES = frozenset({"budget_exceeded"})

# LiteLLM 1.108's router names a model it has no deployment for, on both routes, as
# "/chat/completions: Invalid model name passed in model=X. Call `/v1/models` to view
# available models for your key." (400; "anthropic_messages: ..." on the passthrough).
_UNSERVED = (
    r"^(?:[\w/.-]+: +){0,2}invalid model name passed in model=(?P<model>\S+?)(?:\.(?:\s|$)|$)"
)


@functools.cache
def _unserved() -> re.Pattern[str]:
    return re.compile(_UNSERVED, re.IGNORECASE)


def unserved_model(message: str | None) -> str | None:
    """The model a proxy error message says it does not serve, or ``None``."""
    found = _unserved().match(message.strip()) if message else None
    return found.group("model") if found else None


class RateLimitPolicy:
    """How a 429 is retried: how often, the default wait, and the longest wait accepted."""

    __slots__ = ("retries", "wait_cap_s", "wait_s")

    def __init__(
        self,
        retries: int = defaults.RATE_LIMIT_RETRIES,
        wait_s: float = defaults.RATE_LIMIT_WAIT_S,
        wait_cap_s: float = defaults.RATE_LIMIT_WAIT_CAP_S,
    ) -> None:
        if retries < 0 or wait_s < 0 or wait_cap_s < 0:
            raise ValueError("rate-limit retries and waits must not be negative")
        self.retries = retries
        self.wait_s = wait_s
        self.wait_cap_s = wait_cap_s


class _Details(TypedDict):
    status: int
    error_type: str | None
    server_message: str | None


class Retry(NamedTuple):
    """Send the request again after ``wait_s`` seconds."""

    wait_s: float


def redact(text: str, token: str) -> str:
    """``text`` with every occurrence of the token replaced by ``[redacted]``."""
    return text.replace(token, REDACTED) if token else text


def is_budget_refusal(info: ErrorInfo | None, body: bytes) -> bool:
    """Whether a reply is the proxy refusing on budget grounds.

    A JSON error body is judged by its ``type`` and ``message`` alone; a body that is
    not a JSON error (a bare text reply) by its text.
    """
    if info is not None:
        if info.type in _BUDGET_TYPES:
            return True
        return info.message is not None and _budget_refusal().match(info.message) is not None
    return _budget_refusal().match(body.decode("utf-8", "replace").lstrip()) is not None


def _is_token_refusal(status: int, error_type: str | None, said: str) -> bool:
    """Whether a reply is the proxy refusing the token: 401, 403 (LiteLLM's answer to a key
    without access to the model, ``key_model_access_denied``), or its answer to an unknown
    key when it has no database (400 ``"No connected db."``, ``no_db_connection``);
    ``said`` is the server's message, or its body when that is not a JSON error."""
    if status in (401, 403):
        return True
    return status == 400 and (
        error_type == "no_db_connection" or said.lower().startswith("no connected db")
    )


def _seconds(value: str | None) -> float | None:
    # "nan" and "inf" parse as floats; neither is a wait anyone can take.
    try:
        number = float(value) if value is not None else math.nan
    except ValueError:
        return None
    return max(number, 0.0) if math.isfinite(number) else None


def requested_wait_s(headers: Mapping[str, str], *, now: datetime) -> float | None:
    """The wait the server asked for: ``retry-after-ms``, else ``Retry-After`` (seconds or date).

    ``headers`` must be case-insensitive (as httpx's are). Unparseable values count as absent.
    """
    millis = _seconds(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000.0
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - now).total_seconds(), 0.0)


def _snippet(text: str | None, token: str) -> str | None:
    return None if text is None else redact(text, token)[:BODY_LIMIT]


def classify_failure(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    where: str,
    token: str,
    policy: RateLimitPolicy,
    retries_done: int,
    now: datetime,
    model: str | None = None,
    role: str | None = None,
) -> Retry | LLMError:
    """What to do about a non-2xx reply: a `Retry`, or the error to raise.

    ``where`` names the request in messages (``POST /v1/messages``); ``token`` is
    redacted from everything the error carries; ``model`` and ``role`` (the request's)
    name what to fix when the proxy serves no such model.
    """
    from nisse_llm.wire._overflow import read_overflow
    from nisse_llm.wire.errors import read_error

    info = read_error(body)
    error_type = info.type if info is not None else None
    server_message = _snippet(info.message if info is not None else None, token)
    text = _snippet(body.decode("utf-8", "replace"), token) or ""
    said = server_message if server_message is not None else text
    details = _Details(status=status, error_type=error_type, server_message=server_message)
    if is_budget_refusal(info, body):
        return BudgetExhausted(
            f"{where}: the proxy refused on budget grounds ({status}): {said}", **details
        )
    if _is_token_refusal(status, error_type, said):
        return AuthenticationFailed(
            f"{where}: the proxy refused the token ({status}): {said}; check NISSE_LLM_TOKEN "
            "or llm.token",
            **details,
        )
    if status == 429:
        asked = requested_wait_s(headers, now=now)
        if retries_done >= policy.retries:
            return UpstreamUnavailable(
                f"{where}: rate limited ({status}) after {retries_done} retries: {said}",
                retry_after_s=asked,
                **details,
            )
        if asked is not None and asked > policy.wait_cap_s:
            return UpstreamUnavailable(
                f"{where}: rate limited ({status}); the server asked for a {asked:g} s wait, "
                f"beyond the {policy.wait_cap_s:g} s cap: {said}",
                retry_after_s=asked,
                **details,
            )
        return Retry(policy.wait_s if asked is None else asked)
    overflow = read_overflow(
        info.message if info is not None and info.message else body.decode("utf-8", "replace"),
        error_type=error_type,
        code=info.code if info is not None else None,
    )
    if overflow is not None:
        return ContextWindowExceeded(
            f"{where}: the request exceeds the model's context window ({status}): {said}",
            limit_tokens=overflow.limit_tokens,
            requested_tokens=overflow.requested_tokens,
            **details,
        )
    unserved = unserved_model(server_message if server_message is not None else text)
    if unserved is not None and 400 <= status < 500:
        named = model or unserved
        for_role = f" for role {role!r}" if role else ""
        fix = f"set the role {role!r} to a model it serves" if role else "name a model it serves"
        return ModelNotServed(
            f"{where}: the proxy does not serve {named!r}{for_role} ({status}): {fix}, or "
            f"add {named!r} to the proxy's model list (GET /v1/models lists what it serves)",
            model=named,
            role=role,
            **details,
        )
    if status >= 500 or status == 408:
        return UpstreamUnavailable(f"{where}: upstream unavailable ({status}): {text}", **details)
    return LLMError(f"{where}: request rejected ({status}): {text}", **details)
