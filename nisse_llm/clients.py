"""The clients' former home, kept for imports written against it: the clients live in
`nisse_llm.transport.clients`, the routers in `nisse_llm.transport.routers`."""

from nisse_llm.transport.clients import (
    AnthropicPassthroughClient,
    AsyncAnthropicPassthroughClient,
    AsyncLiteLLMClient,
    AsyncReplyStream,
    LiteLLMClient,
    ReplyStream,
    Usage,
    UsageCallback,
    has_native_adapter,
    select_client,
)
from nisse_llm.transport.routers import AsyncRoleRouter, RoleRouter

__all__ = [
    "AnthropicPassthroughClient",
    "AsyncAnthropicPassthroughClient",
    "AsyncLiteLLMClient",
    "AsyncReplyStream",
    "AsyncRoleRouter",
    "LiteLLMClient",
    "ReplyStream",
    "RoleRouter",
    "Usage",
    "UsageCallback",
    "has_native_adapter",
    "select_client",
]
