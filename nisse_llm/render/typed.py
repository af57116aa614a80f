"""Typed answers: ``complete_as(Model, ...)`` asks for an answer that validates into a model.

Three ways to ask, chosen by the model's rules (`nisse_llm.config.model_rules`, decided by the
caller and handed in) and the route:

- ``native``: the answer's JSON Schema goes as the model's own structured-output field,
  which works with thinking on: ``output_config.format`` for a Claude model on the messages
  route, a strict ``response_format`` for an OpenAI model on the chat route whose schema
  meets strict mode (every property required; ``additionalProperties: false`` is added).
  The answer is the reply's text. The proxy carries both unchanged (measured); on the chat
  route it turns ``response_format`` for a Claude model into a field Anthropic does not
  know, so Claude on that route asks by a tool.
- ``forced``: the answer type becomes a tool (`ToolSpec.from_model`), the request forces it
  (``tool_choice`` naming it), and the call's arguments are validated into the model.
- ``auto``: where a forced tool is refused (Anthropic while thinking: "Thinking may not be
  enabled when tool_choice forces tool use"; claude-opus-5-5 and claude-sonnet-5-5 always),
  the answer tool is offered with ``tool_choice: "auto"`` and the system prompt asks for
  it; a reply that answers in text instead is read as JSON, else it failed.

`TypedExchange` is the sans-I/O part: what to send, and what a reply means (an answer,
another attempt, or `OutputValidationError`); the clients only send. An answer that
does not validate is sent back, with pydantic's errors, ``repair_attempts`` times at
most; every attempt's usage is summed. ``TypedReply.events`` is the whole exchange,
ready to append to the log: every tool call in it is answered (the accepted answer by a
short result), so the next request renders it as it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from nisse_llm.config.options import AnswerOptions, RequestOptions
from nisse_llm.errors import OutputValidationError
from nisse_llm.events.canonical import (
    TOOL_NAME_PATTERN,
    AssistantText,
    CallInfo,
    CanonicalEvent,
    Completion,
    LogLike,
    ToolCall,
    ToolResult,
    ToolsLike,
    ToolSpec,
    Usage,
    UserText,
    as_events,
    as_tool_specs,
)
from nisse_llm.events.tool_text import validation_feedback
from nisse_llm.routes import ROUTE_TABLE

__all__ = [
    "ACCEPTED",
    "NOT_RUN",
    "AnswerRules",
    "TypedExchange",
    "TypedReply",
    "answer_tool",
    "check_output_type",
    "closed_schema",
    "error_summary",
    "forces_tool",
    "native_feedback",
    "native_schema",
    "parse_answer_text",
]


class AnswerRules(Protocol):
    """What a typed answer reads of the model's rules (a `CallRules` or a `ModelRules`
    row, decided by the caller: this layer never reads the rule tables)."""

    @property
    def family(self) -> Literal["anthropic", "openai"]: ...
    @property
    def structured(self) -> bool: ...
    @property
    def forced_tool(self) -> bool: ...


M = TypeVar("M", bound=BaseModel)

#: The result that answers an accepted answer call, so the log's every call is answered.
ACCEPTED = "Answer accepted."
#: The result of another tool the model called when an answer was asked for.
NOT_RUN = "Not run: a final answer was requested instead."
_NAME = re.compile(TOOL_NAME_PATTERN)
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class TypedReply(Generic[M]):
    """A validated answer: ``value``, the ``events`` to append to the log, and ``usage``
    summed over every attempt (``attempts`` counts them, repairs included); ``calls`` is
    what the proxy said about each attempt's call, in order (its cost among it)."""

    value: M
    events: list[CanonicalEvent]
    usage: Usage
    attempts: int = 1
    calls: tuple[CallInfo, ...] = ()


def answer_tool(output_type: type[BaseModel], taken: Iterable[str] = ()) -> ToolSpec:
    """The tool an answer of ``output_type`` is given through: named after the class."""
    name = output_type.__name__ if _NAME.match(output_type.__name__) else "final_answer"
    if name in set(taken):
        raise ValueError(
            f"a tool is already named {name!r}: the answer type's name must differ from the tools'"
        )
    summary = ToolSpec.from_model(output_type).description
    description = "Give your final answer as the arguments of this tool."
    return ToolSpec.from_model(
        output_type, name=name, description=f"{description} {summary}".strip()
    )


def check_output_type(output_type: object) -> None:
    """`TypeError` unless ``output_type`` is a pydantic model class, saying what to pass."""
    if isinstance(output_type, type) and issubclass(output_type, BaseModel):
        return
    if isinstance(output_type, BaseModel):
        got = f"an instance of {type(output_type).__name__}"
        fix = f"pass the class itself, complete_as({type(output_type).__name__}, ...)"
    else:
        got = repr(output_type)
        fix = (
            "wrap the answer in a model, e.g. class Answer(BaseModel): value: str, then "
            "complete_as(Answer, ...) and read .value.value"
        )
    raise TypeError(f"complete_as needs a pydantic model class for the answer, got {got}: {fix}")


def forces_tool(options: RequestOptions | None, rules: AnswerRules) -> bool:
    """Whether the answer tool can be forced: not for an Anthropic model thinking, nor for a
    model that refuses a forced tool."""
    reasoning = None if options is None else options.reasoning
    thinking = reasoning is not None and reasoning != "off"
    return rules.forced_tool and not (rules.family == "anthropic" and thinking)


def native_schema(
    output_type: type[BaseModel], rules: AnswerRules, route: str
) -> dict[str, Any] | None:
    """The schema to ask for ``output_type`` natively with, or None where the model, the
    route or (OpenAI's strict mode) the schema cannot carry it (module docstring)."""
    if not rules.structured:
        return None
    if ROUTE_TABLE[route].family == "anthropic":
        return closed_schema(output_type.model_json_schema(), require_all=False)
    if rules.family == "openai":
        return closed_schema(output_type.model_json_schema(), require_all=True)
    return None


def closed_schema(schema: dict[str, Any], *, require_all: bool) -> dict[str, Any] | None:
    """``schema`` with ``additionalProperties: false`` on every object that lists its
    properties (so an unknown field is refused, as validation refuses it); None when
    ``require_all`` and an object leaves a property optional (OpenAI's strict mode)."""

    def close(node: Any) -> Any:
        if isinstance(node, list):
            return [close(item) for item in node]
        if not isinstance(node, dict):
            return node
        closed = {key: close(value) for key, value in node.items()}
        properties = node.get("properties")
        if isinstance(properties, dict) and node.get("type") == "object":
            if require_all and set(node.get("required", ())) != set(properties):
                raise _NotStrict
            closed.setdefault("additionalProperties", False)
        return closed

    try:
        result: dict[str, Any] = close(schema)
    except _NotStrict:
        return None
    return result


class _NotStrict(Exception):
    """A schema OpenAI's strict mode cannot take."""


@dataclass
class TypedExchange(Generic[M]):
    """One typed completion across its attempts: what to send next, and what a reply means."""

    output_type: type[M]
    answer: ToolSpec
    tools: list[ToolSpec]
    system: str | None
    options: RequestOptions
    repair_attempts: int
    mode: Literal["native", "forced", "auto"]
    history: list[CanonicalEvent]
    exchange: list[CanonicalEvent] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    attempts: int = 0
    calls: list[CallInfo] = field(default_factory=list)

    @classmethod
    def begin(
        cls,
        output_type: type[M],
        events: LogLike,
        tools: ToolsLike,
        system: str | None,
        *,
        options: RequestOptions | None,
        repair_attempts: int,
        rules: AnswerRules,
        route: str,
    ) -> TypedExchange[M]:
        """Plan the request for a model following ``rules`` on ``route``."""
        check_output_type(output_type)
        if repair_attempts < 0:
            raise ValueError("repair_attempts must be 0 or more")
        history = as_events(events)
        specs = as_tool_specs(tools)
        # Offering the answer tool ends the renderers' "no tools: stub the log's calls" rule,
        # so the log's calls to tools not passed are declared here as those stubs.
        declared = {spec.name for spec in specs}
        for event in history:
            if isinstance(event, ToolCall) and event.tool not in declared:
                declared.add(event.tool)
                specs.append(_stub(event.tool))
        answer = answer_tool(output_type, (spec.name for spec in specs))
        schema = native_schema(output_type, rules, route)
        if schema is not None:
            asked = (options or RequestOptions()).model_dump(exclude_none=True)
            return cls(
                output_type=output_type,
                answer=answer,
                tools=specs,
                system=system,
                options=AnswerOptions(**asked, answer_name=answer.name, answer_schema=schema),
                repair_attempts=repair_attempts,
                mode="native",
                history=history,
            )
        forced = forces_tool(options, rules)
        choice = answer.name if forced else "auto"
        if not forced:
            ask = (
                f"Give your final answer by calling the {answer.name!r} tool "
                "with it as the arguments; do not answer in text."
            )
            system = f"{system}\n\n{ask}" if system and system.strip() else ask
        return cls(
            output_type=output_type,
            answer=answer,
            tools=[*specs, answer],
            system=system,
            options=RequestOptions(tool_choice=choice).over(options),
            repair_attempts=repair_attempts,
            mode="forced" if forced else "auto",
            history=history,
        )

    @property
    def _extra(self) -> Literal["allow", "forbid"]:
        """Unknown fields are refused, as the schema sent says (``additionalProperties:
        false``) and as `Toolbox` refuses them, unless the answer type allows them itself."""
        return "allow" if self.output_type.model_config.get("extra") == "allow" else "forbid"

    @property
    def log(self) -> list[CanonicalEvent]:
        """The log the next attempt sends: the caller's events, then the exchange so far."""
        return [*self.history, *self.exchange]

    def settle(self, completion: Completion) -> TypedReply[M] | None:
        """The answer in ``completion``; ``None`` to ask again (the exchange now holds the
        reply and what was wrong with it); `OutputValidationError` when out of attempts."""
        self.attempts += 1
        self.usage = self.usage + completion.usage
        if completion.call is not None:
            self.calls.append(completion.call)
        reply = completion.events
        calls = [event for event in reply if isinstance(event, ToolCall)]
        answers = [call for call in calls if call.tool == self.answer.name]
        feedback: str
        failed: ToolCall | None = None
        if answers:
            failed = answers[0]
            raw = json.dumps(failed.arguments, ensure_ascii=False)
            try:
                value = self.output_type.model_validate(failed.arguments, extra=self._extra)
            except ValidationError as exc:
                errors = _errors(exc)
                feedback = validation_feedback(self.answer.name, exc)
            else:
                return self._accepted(value, reply, calls, failed)
        else:
            raw = "".join(e.text for e in reply if isinstance(e, AssistantText))
            value_or_error = self._from_text(raw)
            if isinstance(value_or_error, BaseModel):
                return self._accepted(value_or_error, reply, calls, None)
            errors = value_or_error
            if self.mode == "native":
                feedback = native_feedback(self.answer.name, errors)
            else:
                feedback = (
                    f"No answer was given: call the {self.answer.name!r} tool "
                    "with your final answer as its arguments."
                )
        self.exchange.extend(reply)
        if self.attempts > self.repair_attempts:
            results = self._results(calls, failed, feedback)
            raise OutputValidationError(
                f"the answer does not validate as {self.output_type.__name__} after "
                f"{self.attempts} attempt(s): {error_summary(errors)}",
                raw=raw,
                errors=errors,
                attempts=self.attempts,
                events=[*self.exchange, *results],
                usage=self.usage,
            )
        self.exchange.extend(self._results(calls, failed, feedback))
        if failed is None:
            self.exchange.append(UserText(text=feedback))
        return None

    def _from_text(self, text: str) -> M | list[dict[str, Any]]:
        wanted = "an answer in JSON" if self.mode == "native" else "a call to the answer tool"
        missing: list[dict[str, Any]] = [
            {
                "type": "missing",
                "loc": (),
                "msg": f"no {wanted} {self.answer.name!r}",
                "input": text,
            }
        ]
        if self.mode == "forced" or not text.strip():
            return missing
        value, errors = parse_answer_text(self.output_type, text)
        if value is not None:
            return value
        return errors if self.mode == "native" else missing

    def _results(
        self, calls: list[ToolCall], failed: ToolCall | None, feedback: str
    ) -> list[ToolResult]:
        return [
            ToolResult(
                call_id=call.call_id,
                output=feedback if call is failed else NOT_RUN,
                is_error=True,
            )
            for call in calls
        ]

    def _accepted(
        self, value: M, reply: list[CanonicalEvent], calls: list[ToolCall], answer: ToolCall | None
    ) -> TypedReply[M]:
        results = [
            ToolResult(
                call_id=call.call_id,
                output=ACCEPTED if call is answer else NOT_RUN,
                is_error=call is not answer,
            )
            for call in calls
        ]
        return TypedReply(
            value=value,
            events=[*self.exchange, *reply, *results],
            usage=self.usage,
            attempts=self.attempts,
            calls=tuple(self.calls),
        )


def parse_answer_text(output_type: type[M], text: str) -> tuple[M | None, list[dict[str, Any]]]:
    """An answer given as text (JSON, perhaps in a fence) validated into ``output_type``
    (unknown fields refused unless the type allows them), or pydantic's errors for it."""
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    extra: Literal["allow", "forbid"] = (
        "allow" if output_type.model_config.get("extra") == "allow" else "forbid"
    )
    try:
        return output_type.model_validate_json(
            fenced.group(1) if fenced else stripped, extra=extra
        ), []
    except ValidationError as exc:
        return None, _errors(exc)


def native_feedback(name: str, errors: list[dict[str, Any]]) -> str:
    """The model-facing text for a structured answer that did not validate."""
    return (
        f"Your answer does not validate as {name}: {error_summary(errors)}. "
        "Answer again with JSON that follows the schema."
    )


def _stub(name: str) -> ToolSpec:
    from nisse_llm.render._wording import STUB_TOOL_DESCRIPTION

    return ToolSpec(name=name, description=STUB_TOOL_DESCRIPTION, parameters={"type": "object"})


def _errors(exc: ValidationError) -> list[dict[str, Any]]:
    return [dict(error) for error in exc.errors(include_url=False)]


def error_summary(errors: list[dict[str, Any]]) -> str:
    parts = []
    for error in errors[:3]:
        where = ".".join(str(p) for p in error.get("loc", ())) or "(answer)"
        parts.append(f"{where}: {error.get('msg')}")
    more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
    return "; ".join(parts) + more
