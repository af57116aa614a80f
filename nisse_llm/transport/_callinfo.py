"""Read the proxy's call metadata from its response headers (pure: headers in, `CallInfo` out).

LiteLLM 1.108 sends ``x-litellm-*`` headers on every non-streamed reply and error:
the call id its logs and spend records are keyed by, the cost in USD as a decimal string
(``0`` for a model without prices, and on errors), the key's spend so far, the model
group and deployment id, its own duration and its attempted retries and fallbacks. A
streamed reply's headers go out before generation, so they carry no cost: the cost is
then computed from the model's prices (`priced`). Any header absent or unreadable is
``None``, so a plain OpenAI-compatible server gives an all-``None`` `CallInfo`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from decimal import Context, Decimal, InvalidOperation
from typing import Final

from nisse_llm.events.canonical import CallInfo, Usage

__all__ = ["HEADERS", "USAGE_KEYWORDS", "call_info", "priced", "usage_keywords"]

#: The response headers read, for tests and for documentation.
HEADERS: Final = (
    "x-litellm-call-id",
    "x-litellm-response-cost",
    "x-litellm-key-spend",
    "x-litellm-model-group",
    "x-litellm-model-id",
    "x-litellm-response-duration-ms",
    "x-litellm-attempted-retries",
    "x-litellm-attempted-fallbacks",
)
# A header is the server's text: bound what is kept of it.
_TEXT_LIMIT: Final = 200
# LiteLLM prints its costs as Python floats, binary noise included: 100 input and 7 output
# tokens of gpt-5.4-mini cost "0.00010650000000000001" (measured on 1.108.7). A double
# holds 15 significant decimal digits faithfully (DBL_DIG); the digits past them are noise.
_FLOAT_DIGITS: Final = Context(prec=15)


def _text(headers: Mapping[str, str], name: str, token: str = "") -> str | None:
    value = headers.get(name)
    if value is None:
        return None
    value = value.strip()
    if token:  # a hostile server may echo the caller's key in any header
        value = value.replace(token, "[redacted]")
    return value[:_TEXT_LIMIT] or None


def _decimal(headers: Mapping[str, str], name: str) -> Decimal | None:
    value = _text(headers, name)
    if value is None:
        return None
    try:
        number = Decimal(value)
    except InvalidOperation:
        return None
    return number if number.is_finite() and number >= 0 else None


def _money(headers: Mapping[str, str], name: str) -> Decimal | None:
    """A cost header as the decimal it stands for, without the float's noise."""
    number = _decimal(headers, name)
    if number is None or len(number.as_tuple().digits) <= _FLOAT_DIGITS.prec:
        return number
    rounded = _FLOAT_DIGITS.plus(number)
    # Trailing zeros dropped, never as an exponent ("12", not "1.2E+1").
    return rounded.quantize(Decimal(1)) if rounded == rounded.to_integral() else rounded.normalize()


def _float(headers: Mapping[str, str], name: str) -> float | None:
    number = _decimal(headers, name)
    return None if number is None else float(number)


def _count(headers: Mapping[str, str], name: str) -> int | None:
    value = _text(headers, name)
    return int(value) if value is not None and value.isdigit() and len(value) < 10 else None


# Every field unset; made without validating, so importing this does not build the model.
_EMPTY: Final = CallInfo.model_construct()
_PREFIX: Final = "x-litellm-"


def call_info(headers: Mapping[str, str], *, streamed: bool = False, token: str = "") -> CallInfo:
    """The `CallInfo` a response's headers carry.

    A ``streamed`` reply's cost header, when a server sends one at all, was written before
    the reply was generated and is not read. ``token`` is redacted from the text fields.
    """
    # One pass over the headers (every call pays for this): most servers send none.
    found = {
        name.lower(): value for name, value in headers.items() if name.lower().startswith(_PREFIX)
    }
    if not found:
        return _EMPTY
    cost = None if streamed else _money(found, "x-litellm-response-cost")
    # Every value is checked above: construct without validating again.
    return CallInfo.model_construct(
        call_id=_text(found, "x-litellm-call-id", token),
        cost_usd=cost,
        cost_source="proxy" if cost is not None else None,
        key_spend_usd=_money(found, "x-litellm-key-spend"),
        model_group=_text(found, "x-litellm-model-group", token),
        model_id=_text(found, "x-litellm-model-id", token),
        proxy_duration_ms=_float(found, "x-litellm-response-duration-ms"),
        attempted_retries=_count(found, "x-litellm-attempted-retries"),
        attempted_fallbacks=_count(found, "x-litellm-attempted-fallbacks"),
    )


def _price(value: Decimal | float | None) -> Decimal:
    # Through str(): Decimal(1e-06) would carry the float's binary error into the sum.
    return Decimal(str(value)) if value is not None else Decimal(0)


def priced(
    usage: Usage,
    *,
    input_cost_per_token: Decimal | float | None,
    output_cost_per_token: Decimal | float | None,
    cache_read_cost_per_token: Decimal | float | None = None,
    cache_write_cost_per_token: Decimal | float | None = None,
) -> Decimal | None:
    """What ``usage`` costs at these prices, in USD; ``None`` when the model has none.

    ``usage.input`` counts every prompt token: the cached ones are priced at the cache
    prices (at the input price where the model has none), the rest at the input price,
    as the proxy's own cost does (measured: its ``-input``, ``-cache-read`` and
    ``-cache-creation`` parts add up this way).
    """
    if input_cost_per_token is None and output_cost_per_token is None:
        return None
    fresh = max(usage.input - usage.cache_read - usage.cache_write, 0)
    read = input_cost_per_token if cache_read_cost_per_token is None else cache_read_cost_per_token
    write = (
        input_cost_per_token if cache_write_cost_per_token is None else cache_write_cost_per_token
    )
    return (
        fresh * _price(input_cost_per_token)
        + usage.output * _price(output_cost_per_token)
        + usage.cache_read * _price(read)
        + usage.cache_write * _price(write)
    )


#: The keywords a usage callback may declare to receive beyond ``(usage, model)``.
USAGE_KEYWORDS: Final = frozenset({"role", "call"})


def usage_keywords(callback: Callable[..., object] | None) -> frozenset[str]:
    """Which of ``role`` and ``call`` a usage callback takes (by name, or through ``**``).

    A callback written as ``(usage, model)`` gets exactly those two, as before.
    """
    if callback is None:
        return frozenset()
    try:
        params = inspect.signature(callback).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable without a signature
        return frozenset()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return USAGE_KEYWORDS
    named = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return frozenset(p.name for p in params if p.name in USAGE_KEYWORDS and p.kind in named)
