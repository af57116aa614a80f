"""The OpenAI chat completions route: ``POST {base}/chat/completions``, every model the
proxy normalises."""

from __future__ import annotations

from typing import Final

from nisse_llm.routes.descriptor import RouteDescriptor

__all__ = ["CHAT_MAX_STOP_SEQUENCES", "OPENAI_CHAT"]

#: "Up to 4 sequences" (OpenAI chat completions ``stop``); LiteLLM passes the list through.
CHAT_MAX_STOP_SEQUENCES: Final = 4

OPENAI_CHAT = RouteDescriptor(
    name="openai_chat",
    path="/chat/completions",
    auth_headers=lambda token: {"authorization": f"Bearer {token}"},
    # Without include_usage the chat route's stream carries no usage at all.
    stream_fields=b',"stream":true,"stream_options":{"include_usage":true}}',
    request_model="nisse_llm.wire.openai_chat:OpenAIChatRequest",
    renderer="nisse_llm.render.openai_chat:OpenAIChatRenderer",
    accumulator="nisse_llm.stream.chat:OpenAIChatStreamAccumulator",
    clients=(
        "nisse_llm.transport.clients:LiteLLMClient",
        "nisse_llm.transport.clients:AsyncLiteLLMClient",
    ),
    kit="nisse_llm.testing.kits.openai_chat:OPENAI_CHAT_KIT",
    chosen_by="default",
    max_stop_sequences=CHAT_MAX_STOP_SEQUENCES,
    modules=(
        "nisse_llm.routes.openai_chat",
        "nisse_llm.wire.openai_chat",
        "nisse_llm.wire.openai_chat_reply",
        "nisse_llm.render.openai_chat",
        "nisse_llm.render.openai_chat_reply",
        "nisse_llm.render.openai_chat_fields",
        "nisse_llm.testing.kits.openai_chat",
        "nisse_llm.stream.chat",
    ),
)
