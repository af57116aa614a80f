"""The OpenAI Responses route: ``POST {base}/v1/responses``, statelessly, for the OpenAI
models whose rule row names it (current reasoning models with tools)."""

from __future__ import annotations

from nisse_llm.routes.descriptor import RouteDescriptor

__all__ = ["OPENAI_RESPONSES"]

OPENAI_RESPONSES = RouteDescriptor(
    name="openai_responses",
    path="/v1/responses",
    auth_headers=lambda token: {"authorization": f"Bearer {token}"},
    stream_fields=b',"stream":true}',
    request_model="nisse_llm.wire.openai_responses:OpenAIResponsesRequest",
    renderer="nisse_llm.render.openai_responses:OpenAIResponsesRenderer",
    accumulator="nisse_llm.stream.responses:ResponsesStreamAccumulator",
    clients=(
        "nisse_llm.transport.responses_client:OpenAIResponsesClient",
        "nisse_llm.transport.responses_client:AsyncOpenAIResponsesClient",
    ),
    kit="nisse_llm.testing.kits.openai_responses:OPENAI_RESPONSES_KIT",
    # A reasoning model thinks before it answers: the read timeout is the passthrough's.
    long_turns=True,
    # The upstream serves /responses and /v1/responses alike.
    served_at="/responses",
    modules=(
        "nisse_llm.routes.openai_responses",
        "nisse_llm.wire.openai_responses",
        "nisse_llm.wire.openai_responses_reply",
        "nisse_llm.render.openai_responses",
        "nisse_llm.render.openai_responses_reply",
        "nisse_llm.render.openai_responses_fields",
        "nisse_llm.testing.kits.openai_responses",
        "nisse_llm.stream.responses",
        "nisse_llm.transport.responses_client",
    ),
)
