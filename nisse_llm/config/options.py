"""Per-request options, provider-neutral: how a call is made, beside which model makes it.

Pure: no I/O, no environment. Every field is optional; ``None`` means "not set here": the
value is inherited from a lower layer, or, when no layer sets it, nothing is sent and the
provider's default applies. Layers, highest first: the call's options, the role's profile
(routers), the client's defaults (``llm.max_output_tokens``). `RequestOptions.over`
combines two layers.

Whether a combination is valid for a given model and route (a thinking budget below the
output ceiling, no sampling for Anthropic models, a named tool among the tools passed) is
decided when a request is rendered, where the model and the tools are known.
"""

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, PositiveInt

from nisse_llm.events.canonical import TOOL_NAME_PATTERN

__all__ = [
    "AnswerOptions",
    "ReasoningDisplay",
    "ReasoningEffort",
    "ReasoningSetting",
    "RequestOptions",
    "ToolChoice",
]

#: Named effort levels, weakest first; ``"off"`` asks for no reasoning at all. Which levels
#: a model takes is its row's in `nisse_llm.config.model_rules`.
ReasoningEffort: TypeAlias = Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"]
#: How a Claude model's thinking comes back: ``summarized`` text, or ``omitted`` (only the
#: signature, for continuity).
ReasoningDisplay: TypeAlias = Literal["summarized", "omitted"]
#: An effort level, or an explicit thinking budget in tokens.
ReasoningSetting: TypeAlias = ReasoningEffort | PositiveInt
#: ``"auto"``, ``"none"``, ``"required"`` (some tool), or the name of the one tool to call.
ToolChoice: TypeAlias = (
    Literal["auto", "none", "required"] | Annotated[str, Field(pattern=TOOL_NAME_PATTERN)]
)
StopSequence = Annotated[str, Field(min_length=1)]


class RequestOptions(BaseModel):
    """How a request is made: output ceiling, reasoning, sampling, stop sequences, tools."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    max_output_tokens: PositiveInt | None = Field(
        default=None, description="Output ceiling for the reply, in tokens."
    )
    reasoning: ReasoningSetting | None = Field(
        default=None,
        description=(
            'Reasoning: "off", "minimal", "low", "medium", "high", "xhigh", "max" (as the '
            "model offers them), or a thinking budget in tokens (where the model takes one)."
        ),
    )
    temperature: float | None = Field(
        default=None,
        ge=0.0,
        le=2.0,
        allow_inf_nan=False,
        description="Sampling temperature, 0 to 2 (not for Anthropic models).",
    )
    top_p: float | None = Field(
        default=None,
        gt=0.0,
        le=1.0,
        allow_inf_nan=False,
        description="Nucleus sampling mass, above 0 and at most 1 (not for Anthropic models).",
    )
    stop: tuple[StopSequence, ...] | None = Field(
        default=None, description="Sequences that end the reply when the model writes them."
    )
    tool_choice: ToolChoice | None = Field(
        default=None,
        description='"auto", "none", "required" (some tool), or the name of one tool to call.',
    )
    parallel_tool_calls: bool | None = Field(
        default=None, description="Whether the model may call several tools in one turn."
    )
    reasoning_display: ReasoningDisplay | None = Field(
        default=None,
        description=(
            'How a Claude model\'s thinking comes back when it thinks: "summarized" or '
            '"omitted" (only a signature).'
        ),
    )
    like: Annotated[str, Field(min_length=1, max_length=256, pattern=r"^\S+$")] | None = Field(
        default=None,
        description=(
            "The model whose rules and route the request follows: for a proxy alias "
            '("team-planner"), the model it stands for ("claude-opus-5-5").'
        ),
    )

    def over(self, base: "RequestOptions | None") -> "RequestOptions":
        """These options layered over ``base``: each field set here wins, the rest inherit."""
        if base is None:
            return self
        mine = self.model_dump(exclude_none=True)
        if not mine:
            return base
        return base.model_copy(update=mine)

    @property
    def is_empty(self) -> bool:
        """True when no field is set."""
        return not self.model_dump(exclude_none=True)


class AnswerOptions(RequestOptions):
    """Request options that also carry the JSON Schema a structured answer must follow,
    sent natively (``output_config.format`` on the messages route, a strict
    ``response_format`` on the chat route): what ``complete_as`` sends to a model that takes
    it. Not a role profile's: only a typed call sets it."""

    answer_name: Annotated[str, Field(pattern=TOOL_NAME_PATTERN)]
    answer_schema: dict[str, Any]

    def over(self, base: "RequestOptions | None") -> "AnswerOptions":
        """These options over ``base`` as `RequestOptions.over` layers them, the answer's
        schema kept."""
        answer = {"answer_name", "answer_schema"}
        plain = RequestOptions(**self.model_dump(exclude_none=True, exclude=answer))
        merged = plain.over(base).model_dump(exclude_none=True)
        return AnswerOptions(
            **merged, answer_name=self.answer_name, answer_schema=self.answer_schema
        )

    def __hash__(self) -> int:
        # The schema is a dict: hash the options by their JSON (a frozen model's default
        # hash would hash the dict).
        return hash(self.model_dump_json())
