"""The Anthropic messages passthrough: ``POST {base}/v1/messages``, the vendor-native
route of the models with a passthrough prefix (spec A13)."""

from __future__ import annotations

from nisse_llm.routes.descriptor import RouteDescriptor

__all__ = ["ANTHROPIC_MESSAGES"]

ANTHROPIC_MESSAGES = RouteDescriptor(
    name="anthropic_messages",
    path="/v1/messages",
    # LiteLLM authenticates /v1/messages by x-api-key alone, and Authorization wins when
    # both are sent; sending both keeps either proxy configuration working.
    auth_headers=lambda token: {
        "authorization": f"Bearer {token}",
        "x-api-key": token,
        "anthropic-version": "2023-06-01",
    },
    stream_fields=b',"stream":true}',
    request_model="nisse_llm.wire.anthropic_messages:AnthropicMessagesRequest",
    renderer="nisse_llm.render.anthropic_messages:AnthropicMessagesRenderer",
    accumulator="nisse_llm.stream.messages:AnthropicStreamAccumulator",
    clients=(
        "nisse_llm.transport.clients:AnthropicPassthroughClient",
        "nisse_llm.transport.clients:AsyncAnthropicPassthroughClient",
    ),
    kit="nisse_llm.testing.route_kits:ANTHROPIC_MESSAGES_KIT",
    chosen_by="prefixes",
    long_turns=True,
    family="anthropic",
    modules=(
        "nisse_llm.routes.anthropic_messages",
        "nisse_llm.wire.anthropic_messages",
        "nisse_llm.wire.anthropic_messages_reply",
        "nisse_llm.render.anthropic_messages",
        "nisse_llm.render.anthropic_messages_reply",
        "nisse_llm.stream.messages",
    ),
)
