"""Typed bodies of the OpenAI chat-completions route: the request we send, the reply we read.

Request models forbid unknown fields and are dumped with
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

from pydantic import BaseModel, ConfigDict, Field

from nisse_llm.wire._bounds import ServerName, TokenCount

__all__ = [
    "OpenAIChatAssistantMessage",
    "OpenAIChatCacheControl",
    "OpenAIChatChoice",
    "OpenAIChatCompletionTokensDetails",
    "OpenAIChatContentPart",
    "OpenAIChatFunction",
    "OpenAIChatFunctionCall",
    "OpenAIChatImagePart",
    "OpenAIChatImageURL",
    "OpenAIChatMessage",
    "OpenAIChatNamedToolChoice",
    "OpenAIChatNamedToolChoiceFunction",
    "OpenAIChatPromptTokensDetails",
    "OpenAIChatReasoningEffort",
    "OpenAIChatRequest",
    "OpenAIChatResponse",
    "OpenAIChatResponseFunction",
    "OpenAIChatResponseMessage",
    "OpenAIChatResponseToolCall",
    "OpenAIChatStreamOptions",
    "OpenAIChatSystemMessage",
    "OpenAIChatTextPart",
    "OpenAIChatThinking",
    "OpenAIChatTool",
    "OpenAIChatToolCall",
    "OpenAIChatToolChoice",
    "OpenAIChatToolMessage",
    "OpenAIChatUsage",
    "OpenAIChatUserMessage",
    "OpenAIChatUserPart",
]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class _Response(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)


# --- request ---------------------------------------------------------------------------


class OpenAIChatCacheControl(_Request):
    """LiteLLM's prompt-cache breakpoint, forwarded to Anthropic models as ``cache_control``."""

    type: Literal["ephemeral"] = "ephemeral"
    ttl: Literal["5m", "1h"] | None = None


class OpenAIChatTextPart(_Request):
    """A text part of a list-shaped ``content`` (used to carry a cache breakpoint)."""

    type: Literal["text"] = "text"
    text: str
    cache_control: OpenAIChatCacheControl | None = None


class OpenAIChatImageURL(_Request):
    """Where an image part's image is: an http(s) URL or a ``data:<type>;base64,`` URL."""

    url: str
    detail: Literal["auto", "low", "high"] | None = None


class OpenAIChatImagePart(_Request):
    """An image part of a user message's list-shaped ``content``."""

    type: Literal["image_url"] = "image_url"
    image_url: OpenAIChatImageURL
    #: LiteLLM's extension: forwarded to an Anthropic model's image block.
    cache_control: OpenAIChatCacheControl | None = None


OpenAIChatUserPart: TypeAlias = Annotated[
    OpenAIChatTextPart | OpenAIChatImagePart, Field(discriminator="type")
]


class OpenAIChatSystemMessage(_Request):
    """The system prompt, sent as the first message."""

    role: Literal["system"] = "system"
    content: str | list[OpenAIChatTextPart]


class OpenAIChatUserMessage(_Request):
    """Text from the user."""

    role: Literal["user"] = "user"
    content: str | list[OpenAIChatUserPart]


class OpenAIChatFunctionCall(_Request):
    """The function a tool call names; ``arguments`` is a JSON object encoded as a string."""

    name: str
    arguments: str


class OpenAIChatToolCall(_Request):
    """One tool call inside an assistant message."""

    id: str
    type: Literal["function"] = "function"
    function: OpenAIChatFunctionCall


class OpenAIChatAssistantMessage(_Request):
    """What the model said: text, tool calls, or both."""

    role: Literal["assistant"] = "assistant"
    content: str | list[OpenAIChatTextPart] | None = None
    tool_calls: list[OpenAIChatToolCall] | None = None
    #: LiteLLM: Anthropic thinking blocks, replayed verbatim at the head of the message.
    thinking_blocks: list[dict[str, Any]] | None = None


class OpenAIChatToolMessage(_Request):
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


class OpenAIChatFunction(_Request):
    """A function the model may call: its name, description and JSON Schema."""

    name: str
    description: str | None = None
    parameters: dict[str, Any]


class OpenAIChatTool(_Request):
    """A tool definition (the route knows only function tools)."""

    type: Literal["function"] = "function"
    function: OpenAIChatFunction
    cache_control: OpenAIChatCacheControl | None = None


class OpenAIChatNamedToolChoiceFunction(_Request):
    """The function a named tool choice forces."""

    name: str


class OpenAIChatNamedToolChoice(_Request):
    """Force one named function."""

    type: Literal["function"] = "function"
    function: OpenAIChatNamedToolChoiceFunction


OpenAIChatToolChoice: TypeAlias = Literal["none", "auto", "required"] | OpenAIChatNamedToolChoice


class OpenAIChatThinking(_Request):
    """LiteLLM's ``thinking`` for Anthropic models: ``enabled`` with a budget, or ``disabled``."""

    type: Literal["enabled", "disabled"]
    budget_tokens: Annotated[int, Field(ge=1024)] | None = None


#: The effort levels the renderer sends (the API knows more: ``minimal``, ``xhigh``...).
OpenAIChatReasoningEffort: TypeAlias = Literal["none", "low", "medium", "high"]


class OpenAIChatStreamOptions(_Request):
    """Streaming options: ask for a final chunk with usage."""

    include_usage: bool | None = None


class OpenAIChatRequest(_Request):
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
    stream: bool | None = None
    stream_options: OpenAIChatStreamOptions | None = None


# --- response --------------------------------------------------------------------------


class OpenAIChatResponseFunction(_Response):
    """The function a returned tool call names.

    ``arguments`` should be a JSON string; some compatible servers send the object itself.
    """

    name: str
    arguments: str | dict[str, Any] | None = None


class OpenAIChatResponseToolCall(_Response):
    """A tool call as returned; its ``id`` is the provider's and is dropped on parsing."""

    id: str | None = None
    type: str | None = None
    function: OpenAIChatResponseFunction


class OpenAIChatContentPart(_Response):
    """One part of a list-shaped ``content`` (some compatible servers send one)."""

    type: str | None = None
    text: str | None = None


class OpenAIChatResponseMessage(_Response):
    """The assistant message of one choice, with LiteLLM's reasoning fields."""

    role: str | None = None
    content: str | list[OpenAIChatContentPart] | None = None
    refusal: str | None = None
    tool_calls: list[OpenAIChatResponseToolCall] | None = None
    #: LiteLLM: a reasoning model's thinking as plain text.
    reasoning_content: str | None = None
    #: LiteLLM: Anthropic thinking / redacted_thinking blocks, verbatim.
    thinking_blocks: list[dict[str, Any]] | None = None


class OpenAIChatChoice(_Response):
    """One choice of a completion."""

    index: int | None = None
    message: OpenAIChatResponseMessage
    finish_reason: str | None = None


class OpenAIChatPromptTokensDetails(_Response):
    """Breakdown of prompt tokens; ``cached_tokens`` were read from the prompt cache."""

    cached_tokens: TokenCount | None = None
    #: LiteLLM's name for tokens written to the prompt cache.
    cache_creation_tokens: TokenCount | None = None
    #: OpenAI's and OpenRouter's name for the same.
    cache_write_tokens: TokenCount | None = None
    audio_tokens: TokenCount | None = None


class OpenAIChatCompletionTokensDetails(_Response):
    """Breakdown of completion tokens."""

    reasoning_tokens: TokenCount | None = None
    audio_tokens: TokenCount | None = None
    accepted_prediction_tokens: TokenCount | None = None
    rejected_prediction_tokens: TokenCount | None = None


class OpenAIChatUsage(_Response):
    """Token usage; ``prompt_tokens`` counts every prompt token, cached or not."""

    prompt_tokens: TokenCount | None = None
    completion_tokens: TokenCount | None = None
    total_tokens: TokenCount | None = None
    prompt_tokens_details: OpenAIChatPromptTokensDetails | None = None
    completion_tokens_details: OpenAIChatCompletionTokensDetails | None = None
    #: LiteLLM, translating an Anthropic reply: tokens written to / read from the cache.
    cache_creation_input_tokens: TokenCount | None = None
    cache_read_input_tokens: TokenCount | None = None
    #: DeepSeek's name for cache reads.
    prompt_cache_hit_tokens: TokenCount | None = None


class OpenAIChatResponse(_Response):
    """``POST /chat/completions`` response body (non-streaming)."""

    id: str | None = None
    object: str | None = None
    created: int | None = None
    model: ServerName | None = None
    choices: list[OpenAIChatChoice]
    usage: OpenAIChatUsage | None = None
    system_fingerprint: str | None = None
