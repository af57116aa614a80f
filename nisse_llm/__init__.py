"""nisse_llm: LLM access for autonomous coding agents through one LiteLLM proxy.

Errors and canonical events load eagerly (they are small); configuration, renderers
and clients load on first use, so ``import nisse_llm`` costs little more than httpx
and pydantic themselves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nisse_llm import _lazy
from nisse_llm._version import __version__ as __version__
from nisse_llm.config.routing import has_native_adapter
from nisse_llm.errors import (
    ApprovalRefused,
    AuthenticationFailed,
    BudgetExhausted,
    ConfigError,
    ConfigTypoWarning,
    ContextWindowExceeded,
    ImageError,
    InsecureConfigFileWarning,
    LLMError,
    ModelNotServed,
    ModelRefusal,
    OutputValidationError,
    RenderError,
    RunLimitReached,
    StreamInterrupted,
    TaskBusy,
    TaskClosed,
    TaskDiverged,
    TaskHeaderMissing,
    TaskPinMismatch,
    TaskStoreMisconfigured,
    TaskStoreUnavailable,
    TruncatedResponse,
    UnknownRoleError,
    UpstreamUnavailable,
)
from nisse_llm.events.canonical import (
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
from nisse_llm.events.images import Image

if TYPE_CHECKING:
    from nisse_llm._partial import PartialReply
    from nisse_llm.agent import AsyncTask, PendingApproval, RunResult, Step, Task
    from nisse_llm.config.options import RequestOptions
    from nisse_llm.config.profiles import RoleProfile
    from nisse_llm.config.settings import (
        Pin,
        RoleMap,
        Settings,
        load_settings,
        load_task_store,
    )
    from nisse_llm.events.tool_changes import ToolChanges
    from nisse_llm.mcp.server import McpServer
    from nisse_llm.render._cache import PromptCache
    from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
    from nisse_llm.render.openai_chat import OpenAIChatRenderer
    from nisse_llm.render.openai_responses import OpenAIResponsesRenderer
    from nisse_llm.render.typed import TypedReply
    from nisse_llm.routes import RouteDescriptor, RouteTable
    from nisse_llm.stream.base import (
        ReasoningDelta,
        RefusalDelta,
        TextDelta,
        ToolArgumentsDelta,
        ToolCallStarted,
    )
    from nisse_llm.task.compaction import LogFix, compact, repair
    from nisse_llm.task.logstore import (
        AsyncFileTaskStore,
        AsyncTaskStore,
        FileTaskStore,
        TaskStore,
    )
    from nisse_llm.task.postgres import AsyncPostgresTaskStore, PostgresTaskStore
    from nisse_llm.task.records import (
        CallRecord,
        ProgramRecord,
        ResumedTask,
        UsageTotal,
        UsageTotals,
    )
    from nisse_llm.task.stores import open_task_store
    from nisse_llm.task.summaries import CompactionPolicy, asummarize, summarize
    from nisse_llm.telemetry import instrument, uninstrument
    from nisse_llm.tools import Toolbox
    from nisse_llm.transport.clients import (
        AnthropicPassthroughClient,
        AsyncAnthropicPassthroughClient,
        AsyncLiteLLMClient,
        AsyncReplyStream,
        LiteLLMClient,
        ReplyStream,
        select_client,
    )
    from nisse_llm.transport.online import OnlineReport, acheck_online, check_online
    from nisse_llm.transport.responses_client import (
        AsyncOpenAIResponsesClient,
        OpenAIResponsesClient,
    )
    from nisse_llm.transport.routers import AsyncRoleRouter, RoleRouter
    from nisse_llm.wire.models_info import Headroom, ModelInfo


# Module -> the public names imported from it on first attribute access (each name once;
# the type checker reads the same imports above, and tests/test_public_api.py holds the
# two equal).
_LAZY_FROM: dict[str, tuple[str, ...]] = {
    "nisse_llm._partial": ("PartialReply",),
    "nisse_llm.agent": ("AsyncTask", "PendingApproval", "RunResult", "Step", "Task"),
    "nisse_llm.config.options": ("RequestOptions",),
    "nisse_llm.config.profiles": ("RoleProfile",),
    "nisse_llm.config.settings": ("Pin", "RoleMap", "Settings", "load_settings", "load_task_store"),
    "nisse_llm.events.tool_changes": ("ToolChanges",),
    "nisse_llm.mcp.server": ("McpServer",),
    "nisse_llm.render._cache": ("PromptCache",),
    "nisse_llm.render.anthropic_messages": ("AnthropicMessagesRenderer",),
    "nisse_llm.render.openai_chat": ("OpenAIChatRenderer",),
    "nisse_llm.render.openai_responses": ("OpenAIResponsesRenderer",),
    "nisse_llm.render.typed": ("TypedReply",),
    "nisse_llm.routes": ("RouteDescriptor", "RouteTable"),
    "nisse_llm.stream.base": (
        "ReasoningDelta",
        "RefusalDelta",
        "TextDelta",
        "ToolArgumentsDelta",
        "ToolCallStarted",
    ),
    "nisse_llm.task.compaction": ("LogFix", "compact", "repair"),
    "nisse_llm.task.logstore": (
        "AsyncFileTaskStore",
        "AsyncTaskStore",
        "FileTaskStore",
        "TaskStore",
    ),
    "nisse_llm.task.postgres": ("AsyncPostgresTaskStore", "PostgresTaskStore"),
    "nisse_llm.task.records": (
        "CallRecord",
        "ProgramRecord",
        "ResumedTask",
        "UsageTotal",
        "UsageTotals",
    ),
    "nisse_llm.task.stores": ("open_task_store",),
    "nisse_llm.task.summaries": ("CompactionPolicy", "asummarize", "summarize"),
    "nisse_llm.telemetry": ("instrument", "uninstrument"),
    "nisse_llm.tools": ("Toolbox",),
    "nisse_llm.transport.clients": (
        "AnthropicPassthroughClient",
        "AsyncAnthropicPassthroughClient",
        "AsyncLiteLLMClient",
        "AsyncReplyStream",
        "LiteLLMClient",
        "ReplyStream",
        "select_client",
    ),
    "nisse_llm.transport.online": ("OnlineReport", "acheck_online", "check_online"),
    "nisse_llm.transport.responses_client": ("AsyncOpenAIResponsesClient", "OpenAIResponsesClient"),
    "nisse_llm.transport.routers": ("AsyncRoleRouter", "RoleRouter"),
    "nisse_llm.wire.models_info": ("Headroom", "ModelInfo"),
}
_LAZY = {name: module for module, names in _LAZY_FROM.items() for name in names}

__all__ = [
    "AnthropicMessagesRenderer",
    "AnthropicPassthroughClient",
    "ApprovalRefused",
    "AssistantText",
    "AsyncAnthropicPassthroughClient",
    "AsyncFileTaskStore",
    "AsyncLiteLLMClient",
    "AsyncOpenAIResponsesClient",
    "AsyncPostgresTaskStore",
    "AsyncReplyStream",
    "AsyncRoleRouter",
    "AsyncTask",
    "AsyncTaskStore",
    "AuthenticationFailed",
    "BudgetExhausted",
    "CallInfo",
    "CallRecord",
    "CanonicalEvent",
    "Compaction",
    "CompactionPolicy",
    "Completion",
    "ConfigError",
    "ConfigTypoWarning",
    "ContextWindowExceeded",
    "FileTaskStore",
    "Headroom",
    "Image",
    "ImageError",
    "InsecureConfigFileWarning",
    "LLMError",
    "LiteLLMClient",
    "LogFix",
    "McpServer",
    "ModelInfo",
    "ModelNotServed",
    "ModelRefusal",
    "OnlineReport",
    "OpenAIChatRenderer",
    "OpenAIResponsesClient",
    "OpenAIResponsesRenderer",
    "OutputValidationError",
    "PartialReply",
    "PendingApproval",
    "Pin",
    "PostgresTaskStore",
    "ProgramRecord",
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
    "RouteDescriptor",
    "RouteTable",
    "RunLimitReached",
    "RunResult",
    "Settings",
    "Step",
    "StoredEvent",
    "StreamInterrupted",
    "Task",
    "TaskBusy",
    "TaskClosed",
    "TaskDiverged",
    "TaskHeaderMissing",
    "TaskPinMismatch",
    "TaskStore",
    "TaskStoreMisconfigured",
    "TaskStoreUnavailable",
    "TextDelta",
    "ToolArgumentsDelta",
    "ToolCall",
    "ToolCallStarted",
    "ToolChanges",
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
    "load_task_store",
    "mint_call_id",
    "open_task_store",
    "repair",
    "select_client",
    "summarize",
    "uninstrument",
]


# The task stores' names before they had siblings: kept for one release, with a warning.
_OLD_NAMES = {
    "LogStore": "FileTaskStore",
    "AsyncLogStore": "AsyncFileTaskStore",
    "PostgresLogStore": "PostgresTaskStore",
    "AsyncPostgresLogStore": "AsyncPostgresTaskStore",
}

__getattr__ = _lazy.lazy_getattr(__name__, _LAZY, globals(), old_names=_OLD_NAMES)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
