"""The Anthropic messages passthrough: ``POST {base}/v1/messages``, the vendor-native
route of the models with a passthrough prefix (spec A13)."""

from __future__ import annotations

from nisse_llm.routes.descriptor import RouteDescriptor

__all__ = ["ANTHROPIC_MESSAGES", "is_anthropic_model"]

#: Names that are Anthropic's by themselves: Claude's own names and LiteLLM's provider prefix.
_ANTHROPIC_NAMES = ("claude-", "anthropic/")
_LITELLM_CLAUDE_ROUTES = ("bedrock/", "vertex_ai/", "openrouter/anthropic/")


def is_anthropic_model(model: str, prefixes: tuple[str, ...] = ()) -> bool:
    """Whether ``model`` is served by Anthropic, by its name.

    A model is Anthropic's when its name says so (``claude-...``, ``anthropic/...``, or a
    LiteLLM route to Anthropic: ``bedrock/...``, ``vertex_ai/...``,
    ``openrouter/anthropic/...`` naming a ``claude`` model), or when it takes the messages
    passthrough by one of the operator's extra ``prefixes``. A proxy alias that hides an
    Anthropic model behind another name is recognised through its ``like``
    (`nisse_llm.config.option_rules.request_rules`). It lives beside the route because it
    is a fact of names, read by config (the model's family) and render (where prompt-cache
    breakpoints go) alike.
    """
    if model.startswith(_ANTHROPIC_NAMES) or (prefixes and model.startswith(prefixes)):
        return True
    return model.startswith(_LITELLM_CLAUDE_ROUTES) and "claude" in model.lower()


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
    kit="nisse_llm.testing.kits.anthropic_messages:ANTHROPIC_MESSAGES_KIT",
    chosen_by="prefixes",
    long_turns=True,
    family="anthropic",
    modules=(
        "nisse_llm.routes.anthropic_messages",
        "nisse_llm.wire.anthropic_messages",
        "nisse_llm.wire.anthropic_messages_reply",
        "nisse_llm.render.anthropic_messages",
        "nisse_llm.render.anthropic_messages_reply",
        "nisse_llm.render.anthropic_messages_fields",
        "nisse_llm.testing.kits.anthropic_messages",
        "nisse_llm.stream.messages",
    ),
)
