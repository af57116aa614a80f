"""The official judges of the Responses route: the openai SDK's request and reply types.

``ResponseCreateParamsNonStreaming`` is a TypedDict tree; wrapped in a model with
``extra="forbid"``, that config reaches every nested TypedDict that has none of its own,
so an unknown key anywhere fails. Its ``Iterable`` fields validate lazily, so the result
is drained. Replies are built with ``construct_type``, as the SDK's client builds them
(its ``Response`` model refuses real replies that lack ``cache_write_tokens``).
"""

from __future__ import annotations

from typing import Any

from openai._models import construct_type
from openai.types.responses import Response
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import BaseModel, ConfigDict

__all__ = ["judge_request", "official_reply"]


class _OfficialJudge(BaseModel):
    model_config = ConfigDict(extra="forbid")

    body: ResponseCreateParamsNonStreaming


def _drain(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _drain(item) for key, item in value.items()}
    if isinstance(value, str | bytes | int | float | bool) or value is None:
        return value
    return [_drain(item) for item in value]  # lists and lazy ValidatorIterators alike


def judge_request(body: dict[str, Any]) -> None:
    """Validate ``body`` against the SDK's ``ResponseCreateParams``, unknown keys forbidden."""
    _drain(_OfficialJudge.model_validate({"body": body}).body)


def official_reply(raw: dict[str, Any]) -> Response:
    """The SDK's own parse of a reply body."""
    reply = construct_type(type_=Response, value=raw)
    assert isinstance(reply, Response)
    return reply
