"""Typed bodies of the OpenAI chat-completions route: the request we send, the reply we read.

Request models (reply models live in `nisse_llm.wire.openai_chat_reply` and are exported
here too) forbid unknown fields and are dumped with
``model_dump_json(exclude_none=True)``: every optional field is ``None`` when unset, so
it is left out of the body. ``cache_control`` (on text parts and tools) is LiteLLM's
extension for Anthropic models, which it forwards as Anthropic cache breakpoints; the
OpenAI API itself does not know it; nor does it know ``thinking``, LiteLLM's extension that it
forwards as sent to Anthropic models (the renderer sends it instead of ``reasoning_effort``
for those, see `nisse_llm.render._options`), nor ``thinking_blocks`` on an assistant message,
which LiteLLM puts back at the head of the Anthropic message. Response models ignore fields they do not know and accept
an explicit ``null`` wherever a field is optional (LiteLLM sends ``"tool_calls": null``,
gateways add ``x_groq``, ``reasoning_details``, ``extra_content`` and more).
"""

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import ConfigDict, Field
from typing_extensions import TypedDict

from nisse_llm.wire._request_base import (
    CacheControlShape,
    EffortShape,
    ReasoningEffort,
    RequestModel,
    ThinkingShape,
    ToolChoiceMode,
)

# The reply bodies live apart (a client reading replies imports only them); exported here too.
from nisse_llm.wire.openai_chat_reply import *  # noqa: F403
from nisse_llm.wire.openai_chat_reply import __all__ as _replies

__all__ = [
    *_replies,
    "OpenAIChatAssistantMessage",
    "OpenAIChatCacheControl",
    "OpenAIChatFunction",
    "OpenAIChatFunctionCall",
    "OpenAIChatImagePart",
    "OpenAIChatImageURL",
    "OpenAIChatJSONSchema",
    "OpenAIChatMessage",
    "OpenAIChatNamedToolChoice",
    "OpenAIChatNamedToolChoiceFunction",
    "OpenAIChatOutputConfig",
    "OpenAIChatReasoningEffort",
    "OpenAIChatRequest",
    "OpenAIChatResponseFormat",
    "OpenAIChatStreamOptions",
    "OpenAIChatSystemMessage",
    "OpenAIChatTextPart",
    "OpenAIChatThinking",
    "OpenAIChatTool",
    "OpenAIChatToolCall",
    "OpenAIChatToolChoice",
    "OpenAIChatToolMessage",
    "OpenAIChatUserMessage",
    "OpenAIChatUserPart",
]


# --- request ---------------------------------------------------------------------------


class OpenAIChatCacheControl(CacheControlShape):
    """LiteLLM's prompt-cache breakpoint, forwarded to Anthropic models as ``cache_control``."""


class OpenAIChatTextPart(RequestModel):
    """A text part of a list-shaped ``content`` (used to carry a cache breakpoint)."""

    type: Literal["text"] = "text"
    text: str
    cache_control: OpenAIChatCacheControl | None = None


class OpenAIChatImageURL(RequestModel):
    """Where an image part's image is: an http(s) URL or a ``data:<type>;base64,`` URL."""

    url: str
    detail: Literal["auto", "low", "high"] | None = None


class OpenAIChatImagePart(RequestModel):
    """An image part of a user message's list-shaped ``content``."""

    type: Literal["image_url"] = "image_url"
    image_url: OpenAIChatImageURL
    #: LiteLLM's extension: forwarded to an Anthropic model's image block.
    cache_control: OpenAIChatCacheControl | None = None


OpenAIChatUserPart: TypeAlias = Annotated[
    OpenAIChatTextPart | OpenAIChatImagePart, Field(discriminator="type")
]


class OpenAIChatSystemMessage(RequestModel):
    """The system prompt, sent as the first message."""

    role: Literal["system"] = "system"
    content: str | list[OpenAIChatTextPart]


class OpenAIChatUserMessage(RequestModel):
    """Text from the user."""

    role: Literal["user"] = "user"
    content: str | list[OpenAIChatUserPart]


class OpenAIChatFunctionCall(RequestModel):
    """The function a tool call names; ``arguments`` is a JSON object encoded as a string."""

    name: str
    arguments: str


class OpenAIChatToolCall(RequestModel):
    """One tool call inside an assistant message."""

    id: str
    type: Literal["function"] = "function"
    function: OpenAIChatFunctionCall


class OpenAIChatAssistantMessage(RequestModel):
    """What the model said: text, tool calls, or both."""

    role: Literal["assistant"] = "assistant"
    content: str | list[OpenAIChatTextPart] | None = None
    tool_calls: list[OpenAIChatToolCall] | None = None
    #: LiteLLM: Anthropic thinking blocks, replayed verbatim at the head of the message.
    thinking_blocks: list[dict[str, Any]] | None = None


class OpenAIChatToolMessage(RequestModel):
    """The result of one tool call, answering the call with the same id."""

    role: Literal["tool"] = "tool"
    tool_call_id: str
    content: str | list[OpenAIChatTextPart]


OpenAIChatMessage: TypeAlias = Annotated[
    OpenAIChatSystemMessage
    | OpenAIChatUserMessage
    | OpenAIChatAssistantMessage
    | OpenAIChatToolMessage,
    Field(discriminator="role"),
]


class OpenAIChatFunction(RequestModel):
    """A function the model may call: its name, description and JSON Schema; ``strict``
    (sent only as ``true``) holds the model's arguments to the schema."""

    name: str
    description: str | None = None
    parameters: dict[str, Any]
    strict: bool | None = None


class OpenAIChatTool(RequestModel):
    """A tool definition (the route knows only function tools)."""

    type: Literal["function"] = "function"
    function: OpenAIChatFunction
    cache_control: OpenAIChatCacheControl | None = None


class OpenAIChatNamedToolChoiceFunction(RequestModel):
    """The function a named tool choice forces."""

    name: str


class OpenAIChatNamedToolChoice(RequestModel):
    """Force one named function."""

    type: Literal["function"] = "function"
    function: OpenAIChatNamedToolChoiceFunction


OpenAIChatToolChoice: TypeAlias = ToolChoiceMode | OpenAIChatNamedToolChoice


class OpenAIChatThinking(ThinkingShape):
    """LiteLLM's ``thinking`` for Anthropic models: ``adaptive``, ``enabled`` with a budget,
    or ``disabled``; ``display`` as Anthropic's."""


class OpenAIChatOutputConfig(EffortShape):
    """Anthropic's ``output_config`` (the effort of adaptive thinking), which LiteLLM forwards
    as sent to Anthropic models."""


class OpenAIChatJSONSchema(TypedDict):
    """A strict JSON Schema the answer must follow (``response_format.json_schema``); a
    typed dict, since ``schema`` is a name pydantic models reserve."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    name: str
    schema: dict[str, Any]
    strict: bool


class OpenAIChatResponseFormat(RequestModel):
    """``response_format: {type: json_schema, json_schema}``: structured answers."""

    type: Literal["json_schema"] = "json_schema"
    json_schema: OpenAIChatJSONSchema


#: The effort levels of the API's ``ReasoningEffort`` (which a model takes: `model_rules`).
OpenAIChatReasoningEffort: TypeAlias = ReasoningEffort


class OpenAIChatStreamOptions(RequestModel):
    """Streaming options: ask for a final chunk with usage."""

    include_usage: bool | None = None


class OpenAIChatRequest(RequestModel):
    """``POST /chat/completions`` request body."""

    model: str
    messages: list[OpenAIChatMessage]
    tools: list[OpenAIChatTool] | None = None
    tool_choice: OpenAIChatToolChoice | None = None
    max_tokens: int | None = None
    parallel_tool_calls: bool | None = None
    stop: list[str] | None = None
    temperature: float | None = None
    top_p: float | None = None
    reasoning_effort: OpenAIChatReasoningEffort | None = None
    thinking: OpenAIChatThinking | None = None
    output_config: OpenAIChatOutputConfig | None = None
    response_format: OpenAIChatResponseFormat | None = None
    stream: bool | None = None
    stream_options: OpenAIChatStreamOptions | None = None
