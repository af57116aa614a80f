"""nisse_llm: LLM access for autonomous coding agents through one LiteLLM proxy.

Errors and canonical events load eagerly (they are small); configuration, renderers
and clients load on first use, so ``import nisse_llm`` costs little more than httpx
and pydantic themselves.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from nisse_llm.canonical import (
    AssistantText,
    CallInfo,
    CanonicalEvent,
    Compaction,
    Completion,
    Reasoning,
    StoredEvent,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
    UserImage,
    UserText,
    mint_call_id,
)
from nisse_llm.errors import (
    BudgetExhausted,
    ConfigError,
    ContextWindowExceeded,
    LLMError,
    ModelNotServed,
    ModelRefusal,
    OutputValidationError,
    RenderError,
    StreamInterrupted,
    TruncatedResponse,
    UnknownRoleError,
    UpstreamUnavailable,
)
from nisse_llm.images import Image, ImageError
from nisse_llm.routing import has_native_adapter

if TYPE_CHECKING:
    from nisse_llm.clients import (
        AnthropicPassthroughClient,
        AsyncAnthropicPassthroughClient,
        AsyncLiteLLMClient,
        AsyncReplyStream,
        LiteLLMClient,
        ReplyStream,
        select_client,
    )
    from nisse_llm.compaction import LogFix, compact, repair
    from nisse_llm.config import (
        InsecureConfigFileWarning,
        Pin,
        RoleMap,
        Settings,
        load_settings,
    )
    from nisse_llm.logstore import LogStore, TaskHeaderMissing, TaskPinMismatch
    from nisse_llm.models_info import Headroom, ModelInfo
    from nisse_llm.online import OnlineReport, acheck_online, check_online
    from nisse_llm.options import RequestOptions
    from nisse_llm.profiles import RoleProfile
    from nisse_llm.render._cache import PromptCache
    from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
    from nisse_llm.render.openai_chat import OpenAIChatRenderer
    from nisse_llm.render.openai_responses import OpenAIResponsesRenderer
    from nisse_llm.responses_client import AsyncOpenAIResponsesClient, OpenAIResponsesClient
    from nisse_llm.routers import AsyncRoleRouter, RoleRouter
    from nisse_llm.streaming import (
        PartialReply,
        ReasoningDelta,
        RefusalDelta,
        TextDelta,
        ToolArgumentsDelta,
        ToolCallStarted,
    )
    from nisse_llm.summaries import CompactionPolicy, asummarize, summarize
    from nisse_llm.taskrecord import CallRecord, ResumedTask, UsageTotal, UsageTotals
    from nisse_llm.telemetry import instrument, uninstrument
    from nisse_llm.toolbox import Toolbox
    from nisse_llm.typed import TypedReply

__version__ = "0.1.0"

# Public name -> module that defines it, imported on first attribute access.
_LAZY = {
    "load_settings": "nisse_llm.config",
    "Settings": "nisse_llm.config",
    "Pin": "nisse_llm.config",
    "RoleMap": "nisse_llm.config",
    "InsecureConfigFileWarning": "nisse_llm.config",
    "LogStore": "nisse_llm.logstore",
    "LogFix": "nisse_llm.compaction",
    "compact": "nisse_llm.compaction",
    "repair": "nisse_llm.compaction",
    "CompactionPolicy": "nisse_llm.summaries",
    "summarize": "nisse_llm.summaries",
    "asummarize": "nisse_llm.summaries",
    "TaskHeaderMissing": "nisse_llm.logstore",
    "TaskPinMismatch": "nisse_llm.logstore",
    "CallRecord": "nisse_llm.taskrecord",
    "ResumedTask": "nisse_llm.taskrecord",
    "UsageTotal": "nisse_llm.taskrecord",
    "UsageTotals": "nisse_llm.taskrecord",
    "OnlineReport": "nisse_llm.online",
    "check_online": "nisse_llm.online",
    "acheck_online": "nisse_llm.online",
    "Headroom": "nisse_llm.models_info",
    "ModelInfo": "nisse_llm.models_info",
    "RequestOptions": "nisse_llm.options",
    "RoleProfile": "nisse_llm.profiles",
    "OpenAIChatRenderer": "nisse_llm.render.openai_chat",
    "AnthropicMessagesRenderer": "nisse_llm.render.anthropic_messages",
    "OpenAIResponsesRenderer": "nisse_llm.render.openai_responses",
    "OpenAIResponsesClient": "nisse_llm.responses_client",
    "AsyncOpenAIResponsesClient": "nisse_llm.responses_client",
    "LiteLLMClient": "nisse_llm.clients",
    "AnthropicPassthroughClient": "nisse_llm.clients",
    "AsyncLiteLLMClient": "nisse_llm.clients",
    "AsyncAnthropicPassthroughClient": "nisse_llm.clients",
    "RoleRouter": "nisse_llm.routers",
    "AsyncRoleRouter": "nisse_llm.routers",
    "ReplyStream": "nisse_llm.clients",
    "AsyncReplyStream": "nisse_llm.clients",
    "TextDelta": "nisse_llm.streaming",
    "ReasoningDelta": "nisse_llm.streaming",
    "RefusalDelta": "nisse_llm.streaming",
    "ToolCallStarted": "nisse_llm.streaming",
    "ToolArgumentsDelta": "nisse_llm.streaming",
    "PartialReply": "nisse_llm.errors",
    "PromptCache": "nisse_llm.render._cache",
    "select_client": "nisse_llm.clients",
    "Toolbox": "nisse_llm.toolbox",
    "TypedReply": "nisse_llm.typed",
    "instrument": "nisse_llm.telemetry",
    "uninstrument": "nisse_llm.telemetry",
}

__all__ = [
    "AnthropicMessagesRenderer",
    "AnthropicPassthroughClient",
    "AssistantText",
    "AsyncAnthropicPassthroughClient",
    "AsyncLiteLLMClient",
    "AsyncOpenAIResponsesClient",
    "AsyncReplyStream",
    "AsyncRoleRouter",
    "BudgetExhausted",
    "CallInfo",
    "CallRecord",
    "CanonicalEvent",
    "Compaction",
    "CompactionPolicy",
    "Completion",
    "ConfigError",
    "ContextWindowExceeded",
    "Headroom",
    "Image",
    "ImageError",
    "InsecureConfigFileWarning",
    "LLMError",
    "LiteLLMClient",
    "LogFix",
    "LogStore",
    "ModelInfo",
    "ModelNotServed",
    "ModelRefusal",
    "OnlineReport",
    "OpenAIChatRenderer",
    "OpenAIResponsesClient",
    "OpenAIResponsesRenderer",
    "OutputValidationError",
    "PartialReply",
    "Pin",
    "PromptCache",
    "Reasoning",
    "ReasoningDelta",
    "RefusalDelta",
    "RenderError",
    "ReplyStream",
    "RequestOptions",
    "ResumedTask",
    "RoleMap",
    "RoleProfile",
    "RoleRouter",
    "Settings",
    "StoredEvent",
    "StreamInterrupted",
    "TaskHeaderMissing",
    "TaskPinMismatch",
    "TextDelta",
    "ToolArgumentsDelta",
    "ToolCall",
    "ToolCallStarted",
    "ToolResult",
    "ToolSpec",
    "Toolbox",
    "TruncatedResponse",
    "TypedReply",
    "UnknownRoleError",
    "UpstreamUnavailable",
    "Usage",
    "UsageTotal",
    "UsageTotals",
    "UserImage",
    "UserText",
    "acheck_online",
    "asummarize",
    "check_online",
    "compact",
    "has_native_adapter",
    "instrument",
    "load_settings",
    "mint_call_id",
    "repair",
    "select_client",
    "summarize",
    "uninstrument",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nisse_llm' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
