"""What the proxy knows of a model (limits, prices), and how much of its window a request takes.

Pure: bytes in, values out. The proxy's ``GET /v1/model/info`` lists every model entry
with its ``model_info`` (LiteLLM's price map, or the entry's own overrides): `read_model_infos`
turns it into one `ModelInfo` per model name. ``POST /utils/token_counter`` counts a
request's input tokens without calling the upstream (`token_count_request`,
`read_token_count`); where no proxy counter answers, `estimate_input_tokens` approximates
from the rendered body's text (see its docstring for the measured error).
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, NonNegativeInt

__all__ = [
    "DIGITS_PER_TOKEN",
    "LETTERS_PER_TOKEN",
    "Headroom",
    "ModelInfo",
    "body_output_ceiling",
    "estimate_input_tokens",
    "headroom_of",
    "read_model_ids",
    "read_model_infos",
    "read_token_count",
    "token_count_request",
]


class ModelInfo(BaseModel):
    """A model's limits, token prices (USD) and capabilities, as the proxy reports them.

    Every field is ``None`` where the proxy does not know it (a model its price map
    lacks, with no override in the entry): never a guess.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    max_input_tokens: NonNegativeInt | None = None
    max_output_tokens: NonNegativeInt | None = None
    input_cost_per_token: Decimal | None = None
    output_cost_per_token: Decimal | None = None
    cache_read_cost_per_token: Decimal | None = None
    cache_write_cost_per_token: Decimal | None = None
    supports_reasoning: bool | None = None
    supports_vision: bool | None = None
    supports_prompt_caching: bool | None = None


class Headroom(BaseModel):
    """How much of a model's context window a request leaves free.

    ``input_tokens`` is the request's input as counted (``source``: ``"proxy"``, the
    proxy's token counter, or ``"estimate"``, the local approximation);
    ``max_output_tokens`` the output ceiling the call sends; ``remaining`` what is left
    of ``max_input_tokens`` (the window) after both, negative when the request cannot
    fit, ``None`` where the window is unknown.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    input_tokens: NonNegativeInt
    max_input_tokens: NonNegativeInt | None
    max_output_tokens: NonNegativeInt
    remaining: int | None
    source: Literal["proxy", "estimate"] = "proxy"

    @property
    def fits(self) -> bool | None:
        """Whether the request fits the window (``None`` when the window is unknown)."""
        return None if self.remaining is None else self.remaining >= 0


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if value >= 0 and math.isfinite(value) else None


def _price(value: Any) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        price = Decimal(str(value))
    except InvalidOperation:
        return None
    return price if price.is_finite() and price >= 0 else None


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _model_info(raw: dict[str, Any]) -> ModelInfo:
    return ModelInfo(
        max_input_tokens=_count(raw.get("max_input_tokens")),
        max_output_tokens=_count(raw.get("max_output_tokens")),
        input_cost_per_token=_price(raw.get("input_cost_per_token")),
        output_cost_per_token=_price(raw.get("output_cost_per_token")),
        cache_read_cost_per_token=_price(raw.get("cache_read_input_token_cost")),
        cache_write_cost_per_token=_price(raw.get("cache_creation_input_token_cost")),
        supports_reasoning=_flag(raw.get("supports_reasoning")),
        supports_vision=_flag(raw.get("supports_vision")),
        supports_prompt_caching=_flag(raw.get("supports_prompt_caching")),
    )


def _model_list(body: bytes) -> list[Any]:
    """The ``data`` list of a model list body (either endpoint's); `ValueError` if none."""
    try:
        data = json.loads(body)["data"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"not a model list: {exc}") from None
    if not isinstance(data, list):
        raise ValueError("not a model list: 'data' is not a list")
    return data


def read_model_infos(body: bytes) -> dict[str, ModelInfo]:
    """Model name -> `ModelInfo` from a ``/v1/model/info`` body; `ValueError` if it is not one.

    A name with several deployments keeps its first entry's info (the proxy lists them in
    config order).
    """
    infos: dict[str, ModelInfo] = {}
    for entry in _model_list(body):
        if not isinstance(entry, dict) or not isinstance(entry.get("model_name"), str):
            continue
        raw = entry.get("model_info")
        infos.setdefault(entry["model_name"], _model_info(raw if isinstance(raw, dict) else {}))
    return infos


def read_model_ids(body: bytes) -> list[str]:
    """The model names of a ``/v1/models`` body (OpenAI's list shape); `ValueError` if it
    is not one."""
    return [
        entry["id"]
        for entry in _model_list(body)
        if isinstance(entry, dict) and isinstance(entry.get("id"), str)
    ]


def _body(rendered: bytes) -> dict[str, Any]:
    body = json.loads(rendered)
    if not isinstance(body, dict):
        raise ValueError("a rendered request is a JSON object")
    if isinstance(body.get("input"), list) and "messages" not in body:
        return _as_chat(body)
    return body


def _input_text(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(p.get("text", "")) for p in value if isinstance(p, dict))
    return value if isinstance(value, str) else ""


def _as_chat(body: dict[str, Any]) -> dict[str, Any]:
    """A Responses request in the chat shape the counter reads: its messages, calls and
    outputs as messages, ``instructions`` as the system prompt, function tools in the chat
    shape. Reasoning items are left out (their encrypted content is no text to count)."""
    messages: list[dict[str, Any]] = []
    for item in body["input"]:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message":
            role = "assistant" if item.get("role") == "assistant" else "user"
            messages.append({"role": role, "content": _input_text(item.get("content"))})
        elif kind == "function_call":
            said = f"{item.get('name', '')} {item.get('arguments', '')}"
            messages.append({"role": "assistant", "content": said})
        elif kind == "function_call_output":
            messages.append({"role": "user", "content": _input_text(item.get("output"))})
    chat: dict[str, Any] = {key: value for key, value in body.items() if key != "input"}
    chat["messages"] = messages
    if body.get("instructions"):
        chat["system"] = body["instructions"]
    if isinstance(body.get("tools"), list):
        chat["tools"] = [
            {
                "type": "function",
                "function": {k: v for k, v in tool.items() if k not in ("type", "strict")},
            }
            for tool in body["tools"]
            if isinstance(tool, dict)
        ]
    return chat


def token_count_request(rendered: bytes, model: str) -> bytes:
    """The ``/utils/token_counter`` body for a rendered request of any route (a Responses
    request is read in the chat shape).

    The counter takes chat messages or Anthropic ones, with ``tools`` in either shape and
    a top-level ``system`` (the messages route's); it counts locally, never upstream.
    """
    body = _body(rendered)
    request: dict[str, Any] = {"model": model, "messages": body.get("messages", [])}
    for key in ("tools", "system"):
        if body.get(key):
            request[key] = body[key]
    return json.dumps(request, ensure_ascii=False).encode()


def read_token_count(body: bytes) -> int:
    """``total_tokens`` of a token counter's answer; `ValueError` if it has none."""
    try:
        total = json.loads(body)["total_tokens"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"not a token count: {exc}") from None
    count = _count(total)
    if count is None:
        raise ValueError(f"not a token count: {total!r}")
    return count


def body_output_ceiling(rendered: bytes) -> int:
    """The output ceiling a rendered request sends (``max_tokens``,
    ``max_completion_tokens`` or ``max_output_tokens``); 0 if it sends none."""
    body = _body(rendered)
    for key in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
        count = _count(body.get(key))
        if count is not None:
            return count
    return 0


# Runs a BPE tokenizer tends to keep whole: letters, digits, whitespace; anything else
# (punctuation, each non-ASCII character) is counted as a token of its own.
_RUNS: Final = re.compile(r"[A-Za-z]+|[0-9]+|\s+|.", re.DOTALL)
#: Letters per token and digits per token in the local approximation; one token per other
#: character (punctuation, CJK...), and whitespace free but for long runs (indentation).
LETTERS_PER_TOKEN: Final = 4
DIGITS_PER_TOKEN: Final = 2


def _approximate(text: str) -> int:
    tokens = 0
    for run in _RUNS.findall(text):
        first = run[0]
        if first.isascii() and first.isalpha():
            tokens += -(-len(run) // LETTERS_PER_TOKEN)
        elif first.isascii() and first.isdigit():
            tokens += -(-len(run) // DIGITS_PER_TOKEN)
        elif first.isspace():
            tokens += len(run) // 4
        else:
            tokens += 1
    return tokens


def estimate_input_tokens(rendered: bytes) -> int:
    """A local approximation of a rendered request's input tokens, without any tokenizer.

    Over what the counter would count (messages, tools, system, as JSON): a token per
    four letters of a word and per two digits of a number, one per other character
    (punctuation, each CJK character), whitespace free but for long runs. Measured against
    the proxy's counter (tests/integration/test_limits.py, docs/guides/cost.md: figures) it errs high on
    prose, code and JSON and stays close on hex and numbers: it is meant for deciding
    whether a request fits, where erring high is the safe side.
    """
    body = _body(rendered)
    parts = {key: body[key] for key in ("messages", "tools", "system") if body.get(key)}
    return _approximate(json.dumps(parts, ensure_ascii=False))


def headroom_of(
    input_tokens: int,
    output_ceiling: int,
    info: ModelInfo | None,
    *,
    source: Literal["proxy", "estimate"],
) -> Headroom:
    """The `Headroom` of a request of ``input_tokens`` sending ``output_ceiling``."""
    window = None if info is None else info.max_input_tokens
    return Headroom(
        input_tokens=input_tokens,
        max_input_tokens=window,
        max_output_tokens=output_ceiling,
        remaining=None if window is None else window - input_tokens - output_ceiling,
        source=source,
    )
