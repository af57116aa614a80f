"""Typed bodies of the OpenAI Responses route: the request we send, the reply we read.

``POST {base}/v1/responses``, used statelessly: every request carries the whole log as
``input`` items, with ``store: false`` and ``include: ["reasoning.encrypted_content"]``,
and never ``previous_response_id`` (a fleet of proxies has no shared response store, and a
task record alone must be enough to resume). Request models (reply models live in
`nisse_llm.wire.openai_responses_reply` and are exported here too) forbid unknown fields
and are dumped with ``model_dump_json(exclude_none=True)``: an optional field left
``None`` is left out of the body. A reasoning item goes back as it was received (a plain
JSON object, `OpenAIResponsesRequest.input` takes it as is), so nothing of it is lost.
"""

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import AfterValidator, ConfigDict, Discriminator, Field, Tag
from typing_extensions import TypedDict

from nisse_llm.wire._request_base import ReasoningEffort, RequestModel, ToolChoiceMode

# The reply bodies live apart (a client reading replies imports only them); exported here too.
from nisse_llm.wire.openai_responses_reply import *  # noqa: F403
from nisse_llm.wire.openai_responses_reply import __all__ as _replies

__all__ = [
    *_replies,
    "OpenAIResponsesAssistantMessage",
    "OpenAIResponsesFunctionCall",
    "OpenAIResponsesFunctionCallOutput",
    "OpenAIResponsesFunctionTool",
    "OpenAIResponsesInputImage",
    "OpenAIResponsesInputItem",
    "OpenAIResponsesInputMessage",
    "OpenAIResponsesInputPart",
    "OpenAIResponsesInputText",
    "OpenAIResponsesJSONSchemaFormat",
    "OpenAIResponsesNamedToolChoice",
    "OpenAIResponsesReasoning",
    "OpenAIResponsesReasoningEffort",
    "OpenAIResponsesReasoningInput",
    "OpenAIResponsesRequest",
    "OpenAIResponsesTextConfig",
    "OpenAIResponsesToolChoice",
]


class OpenAIResponsesInputText(RequestModel):
    """A text part of an input message or of a function call's output."""

    type: Literal["input_text"] = "input_text"
    text: str


class OpenAIResponsesInputImage(RequestModel):
    """An image part: an http(s) URL or a ``data:<type>;base64,`` URL. ``detail`` is
    required inside a message, optional in a function call's output."""

    type: Literal["input_image"] = "input_image"
    image_url: str
    detail: Literal["auto", "low", "high"] | None = None


OpenAIResponsesInputPart: TypeAlias = Annotated[
    OpenAIResponsesInputText | OpenAIResponsesInputImage, Field(discriminator="type")
]


class OpenAIResponsesInputMessage(RequestModel):
    """A user or system message (the system prompt goes as ``instructions`` instead)."""

    type: Literal["message"] = "message"
    role: Literal["user", "system", "developer"] = "user"
    content: str | list[OpenAIResponsesInputPart]


class OpenAIResponsesAssistantMessage(RequestModel):
    """What the model said earlier, as an input message of role ``assistant`` (the output
    message form needs the provider's item id, which the log does not keep)."""

    type: Literal["message"] = "message"
    role: Literal["assistant"] = "assistant"
    content: str


class OpenAIResponsesFunctionCall(RequestModel):
    """A function call the model made; ``call_id`` is the log's own id."""

    type: Literal["function_call"] = "function_call"
    call_id: str
    name: str
    arguments: str


class OpenAIResponsesFunctionCallOutput(RequestModel):
    """The result of the call with the same ``call_id``: text, or text and images."""

    type: Literal["function_call_output"] = "function_call_output"
    call_id: str
    output: str | list[OpenAIResponsesInputPart]


def _reasoning_item(value: dict[str, Any]) -> dict[str, Any]:
    if value.get("type") != "reasoning":
        raise ValueError("a plain input item must be a reasoning item as received")
    return value


#: A reasoning item exactly as a reply held it (a plain JSON object, replayed as is).
OpenAIResponsesReasoningInput: TypeAlias = Annotated[
    dict[str, Any], AfterValidator(_reasoning_item)
]


def _input_kind(value: Any) -> str:
    if isinstance(value, dict):
        kind, role = value.get("type"), value.get("role")
    else:
        kind, role = getattr(value, "type", None), getattr(value, "role", None)
    if kind == "message" or (kind is None and role is not None):
        return "assistant" if role == "assistant" else "message"
    return str(kind)


#: One input item: a message, an earlier call, a call's output, or a reasoning item.
OpenAIResponsesInputItem: TypeAlias = Annotated[
    Annotated[OpenAIResponsesInputMessage, Tag("message")]
    | Annotated[OpenAIResponsesAssistantMessage, Tag("assistant")]
    | Annotated[OpenAIResponsesFunctionCall, Tag("function_call")]
    | Annotated[OpenAIResponsesFunctionCallOutput, Tag("function_call_output")]
    | Annotated[OpenAIResponsesReasoningInput, Tag("reasoning")],
    Discriminator(_input_kind),
]


class OpenAIResponsesFunctionTool(RequestModel):
    """A function the model may call. ``strict`` is required by the API: ``true`` for a tool
    whose schema fits strict mode where the model takes it, else ``false``."""

    type: Literal["function"] = "function"
    name: str
    description: str | None = None
    parameters: dict[str, Any]
    strict: bool = False


class OpenAIResponsesNamedToolChoice(RequestModel):
    """Force one named function."""

    type: Literal["function"] = "function"
    name: str


OpenAIResponsesToolChoice: TypeAlias = ToolChoiceMode | OpenAIResponsesNamedToolChoice

#: The effort levels of the API's ``ReasoningEffort`` (which a model takes: `model_rules`).
OpenAIResponsesReasoningEffort: TypeAlias = ReasoningEffort


class OpenAIResponsesReasoning(RequestModel):
    """``reasoning``: the effort, and a summary of the reasoning to read back."""

    effort: OpenAIResponsesReasoningEffort | None = None
    summary: Literal["auto", "concise", "detailed"] | None = None


class OpenAIResponsesJSONSchemaFormat(TypedDict):
    """``text.format`` for structured answers: a strict JSON Schema (a typed dict, since
    ``schema`` is a name pydantic models reserve)."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    type: Literal["json_schema"]
    name: str
    schema: dict[str, Any]
    strict: bool


class OpenAIResponsesTextConfig(RequestModel):
    """``text``: the answer's format."""

    format: OpenAIResponsesJSONSchemaFormat | None = None


class OpenAIResponsesRequest(RequestModel):
    """``POST /v1/responses`` request body."""

    model: str
    instructions: str | None = None
    input: list[OpenAIResponsesInputItem]
    tools: list[OpenAIResponsesFunctionTool] | None = None
    tool_choice: OpenAIResponsesToolChoice | None = None
    parallel_tool_calls: bool | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    reasoning: OpenAIResponsesReasoning | None = None
    text: OpenAIResponsesTextConfig | None = None
    prompt_cache_key: str | None = None
    store: bool = False
    include: list[Literal["reasoning.encrypted_content"]] | None = None
    stream: bool | None = None
