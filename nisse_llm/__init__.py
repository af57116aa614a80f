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
from nisse_llm.log.canonical import (
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
from nisse_llm.log.images import Image

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
    from nisse_llm.log.tool_changes import ToolChanges
    from nisse_llm.log.toolbox import Toolbox
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


# Public name -> module that defines it, imported on first attribute access.
_LAZY = {
    "load_settings": "nisse_llm.config.settings",
    "load_task_store": "nisse_llm.config.settings",
    "Settings": "nisse_llm.config.settings",
    "Pin": "nisse_llm.config.settings",
    "RoleMap": "nisse_llm.config.settings",
    "TaskStore": "nisse_llm.task.logstore",
    "AsyncTaskStore": "nisse_llm.task.logstore",
    "FileTaskStore": "nisse_llm.task.logstore",
    "AsyncFileTaskStore": "nisse_llm.task.logstore",
    "PostgresTaskStore": "nisse_llm.task.postgres",
    "AsyncPostgresTaskStore": "nisse_llm.task.postgres",
    "open_task_store": "nisse_llm.task.stores",
    "LogFix": "nisse_llm.task.compaction",
    "compact": "nisse_llm.task.compaction",
    "repair": "nisse_llm.task.compaction",
    "CompactionPolicy": "nisse_llm.task.summaries",
    "summarize": "nisse_llm.task.summaries",
    "asummarize": "nisse_llm.task.summaries",
    "CallRecord": "nisse_llm.task.records",
    "ProgramRecord": "nisse_llm.task.records",
    "ResumedTask": "nisse_llm.task.records",
    "UsageTotal": "nisse_llm.task.records",
    "UsageTotals": "nisse_llm.task.records",
    "OnlineReport": "nisse_llm.transport.online",
    "RouteDescriptor": "nisse_llm.routes",
    "RouteTable": "nisse_llm.routes",
    "check_online": "nisse_llm.transport.online",
    "acheck_online": "nisse_llm.transport.online",
    "Headroom": "nisse_llm.wire.models_info",
    "ModelInfo": "nisse_llm.wire.models_info",
    "RequestOptions": "nisse_llm.config.options",
    "RoleProfile": "nisse_llm.config.profiles",
    "OpenAIChatRenderer": "nisse_llm.render.openai_chat",
    "AnthropicMessagesRenderer": "nisse_llm.render.anthropic_messages",
    "OpenAIResponsesRenderer": "nisse_llm.render.openai_responses",
    "OpenAIResponsesClient": "nisse_llm.transport.responses_client",
    "AsyncOpenAIResponsesClient": "nisse_llm.transport.responses_client",
    "LiteLLMClient": "nisse_llm.transport.clients",
    "AnthropicPassthroughClient": "nisse_llm.transport.clients",
    "AsyncLiteLLMClient": "nisse_llm.transport.clients",
    "AsyncAnthropicPassthroughClient": "nisse_llm.transport.clients",
    "RoleRouter": "nisse_llm.transport.routers",
    "AsyncRoleRouter": "nisse_llm.transport.routers",
    "ReplyStream": "nisse_llm.transport.clients",
    "AsyncReplyStream": "nisse_llm.transport.clients",
    "TextDelta": "nisse_llm.stream.base",
    "ReasoningDelta": "nisse_llm.stream.base",
    "RefusalDelta": "nisse_llm.stream.base",
    "ToolCallStarted": "nisse_llm.stream.base",
    "ToolArgumentsDelta": "nisse_llm.stream.base",
    "PartialReply": "nisse_llm.errors",
    "PromptCache": "nisse_llm.render._cache",
    "select_client": "nisse_llm.transport.clients",
    "Toolbox": "nisse_llm.log.toolbox",
    "ToolChanges": "nisse_llm.log.tool_changes",
    "McpServer": "nisse_llm.mcp.server",
    "TypedReply": "nisse_llm.render.typed",
    "instrument": "nisse_llm.telemetry",
    "Task": "nisse_llm.agent",
    "AsyncTask": "nisse_llm.agent",
    "RunResult": "nisse_llm.agent",
    "PendingApproval": "nisse_llm.agent",
    "Step": "nisse_llm.agent",
    "uninstrument": "nisse_llm.telemetry",
}

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
