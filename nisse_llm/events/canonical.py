"""The provider-neutral canonical event log: frozen events, stored records, tool specs.

Pure: no I/O, no environment. The only clock read is the timestamp of a new
`StoredEvent`, and the only randomness is `mint_call_id`.
"""

import functools
import secrets
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Literal,
    TypeAlias,
    cast,
)

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt

from nisse_llm import defaults
from nisse_llm.events.images import Image
from nisse_llm.events.tools import (
    TOOL_NAME_PATTERN,
    HasToolSpecs,
    ToolLike,
    ToolsLike,
    ToolSpec,
    as_tool_specs,
)

if TYPE_CHECKING:
    from pydantic import TypeAdapter

__all__ = [
    "CALL_ID_PATTERN",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "TOOL_NAME_PATTERN",
    "AssistantText",
    "CallInfo",
    "CanonicalEvent",
    "Compaction",
    "Completion",
    "HasToolSpecs",
    "LogLike",
    "Reasoning",
    "StoredEvent",
    "ToolCall",
    "ToolLike",
    "ToolResult",
    "ToolSpec",
    "ToolsLike",
    "Usage",
    "UserImage",
    "UserText",
    "WireEvent",
    "as_events",
    "as_tool_specs",
    "dump_jsonl",
    "load_jsonl",
    "log_items",
    "mint_call_id",
    "wire_events",
]

# The strictest common rule: OpenAI caps tool-call ids at 40 characters, Anthropic
# requires ^[a-zA-Z0-9_-]+$ ("tool_use.id: String should match pattern").
CALL_ID_PATTERN = r"^[A-Za-z0-9_-]{1,40}$"

DEFAULT_MAX_OUTPUT_TOKENS = defaults.MAX_OUTPUT_TOKENS

CallId = Annotated[str, Field(pattern=CALL_ID_PATTERN)]


def mint_call_id() -> str:
    """A fresh canonical tool-call id: ``call_`` and 22 URL-safe random characters."""
    return "call_" + secrets.token_urlsafe(16)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class _Event(_Frozen):
    """A canonical event: what a log holds bare or inside a `StoredEvent` record."""


class UserText(_Event):
    """Text from the user (or the agent's harness speaking as the user)."""

    kind: Literal["user_text"] = "user_text"
    text: str


class UserImage(_Event):
    """An image from the user (a screenshot, a diagram), sent where it sits among the texts."""

    kind: Literal["user_image"] = "user_image"
    image: Image


class AssistantText(_Event):
    """Text the model wrote; ``model`` is who produced it."""

    kind: Literal["assistant_text"] = "assistant_text"
    text: str
    model: str


class ToolCall(_Event):
    """A tool call the model made, keyed by a locally minted id (spec A10)."""

    kind: Literal["tool_call"] = "tool_call"
    call_id: CallId
    tool: Annotated[str, Field(pattern=TOOL_NAME_PATTERN)]
    arguments: dict[str, Any]


class ToolResult(_Event):
    """The agent's answer to a `ToolCall`; ``is_error`` marks a failed tool run."""

    kind: Literal["tool_result"] = "tool_result"
    call_id: CallId
    output: str
    is_error: bool = False
    #: Images the tool produced beside its text (left out of the stored record when none,
    #: so logs without images keep their bytes).
    images: tuple[Image, ...] = Field(default=(), exclude_if=lambda images: not images)


class Reasoning(_Event):
    """An opaque provider reasoning block, stored verbatim and tagged with its model.

    ``model`` is the model string the request named (the stable key behind proxy
    aliases); ``response_model`` the one the response named. ``block`` is the
    provider's block as received: Anthropic ``thinking`` (with its ``signature``) or
    ``redacted_thinking``; on the chat route, LiteLLM's ``thinking_blocks`` entries or,
    failing those, ``{"type": "reasoning_content", "reasoning_content": ...}``.
    """

    kind: Literal["reasoning"] = "reasoning"
    model: str
    response_model: str | None = None
    block: dict[str, Any]

    @property
    def replayable(self) -> bool:
        """Whether the block is one Anthropic accepts back (thinking or redacted_thinking)."""
        return self.block.get("type") in ("thinking", "redacted_thinking")


class Compaction(_Event):
    """Where compaction shortened the log: how many events it removed, and their summary.

    Every route sends it as context on the user side (`context`), never as the model's
    own words. In a task file it also names the records it replaces: those numbered
    ``first_seq`` to ``last_seq`` (removed, standing here now) and those in ``elided``
    (kept, their tool output or image replaced by a placeholder); see `TaskStore.resume`.
    """

    kind: Literal["compaction"] = "compaction"
    removed: NonNegativeInt = 0
    summary: str | None = None
    first_seq: NonNegativeInt | None = None
    last_seq: NonNegativeInt | None = None
    elided: tuple[NonNegativeInt, ...] = Field(default=(), exclude_if=lambda seqs: not seqs)

    @property
    def text(self) -> str:
        """What the model is told in its place ("" when it removed nothing: not sent)."""
        if not self.removed and self.summary is None:
            return ""
        said = (
            f"[Context note: {self.removed} earlier event(s) of this conversation were "
            "removed to fit the context window."
        )
        if self.summary is None:
            return said + "]"
        return f"{said} A summary of the removed part follows.]\n\n{self.summary}"

    @functools.cached_property
    def context(self) -> UserText:
        """The user-side text every renderer sends for it (one object per event, so the
        renderers' per-event memo keeps its encoding)."""
        return UserText(text=self.text)


#: The events a renderer sends (a `Compaction` goes out as its `Compaction.context`).
WireEvent: TypeAlias = UserText | UserImage | AssistantText | ToolCall | ToolResult | Reasoning

CanonicalEvent: TypeAlias = Annotated[
    UserText | UserImage | AssistantText | ToolCall | ToolResult | Reasoning | Compaction,
    Field(discriminator="kind"),
]


class StoredEvent(_Frozen):
    """One record of the task log: a sequence number, a UTC timestamp and the event."""

    seq: NonNegativeInt
    at: datetime
    event: CanonicalEvent

    @classmethod
    def now(cls, seq: int, event: CanonicalEvent) -> "StoredEvent":
        """A record stamped with the current UTC time."""
        return cls(seq=seq, at=datetime.now(UTC), event=event)


LogLike: TypeAlias = Sequence[
    StoredEvent
    | UserText
    | UserImage
    | AssistantText
    | ToolCall
    | ToolResult
    | Reasoning
    | Compaction
]


@functools.cache
def _stored() -> "TypeAdapter[StoredEvent]":
    from pydantic import TypeAdapter  # loaded by the first log read or written

    return TypeAdapter(StoredEvent)


_EVENT_NAMES = "UserText, AssistantText, ToolCall, ToolResult, Reasoning, Compaction"


def log_items(log: object) -> Sequence[object]:
    """``log`` as a sequence of its items; `TypeError` when it is not a log at all.

    A string, bytes or a mapping is iterable but is a caller's mistake (a prompt passed
    where ``[UserText(text=...)]`` belongs), so it is refused by name, not rendered.
    """
    if isinstance(log, list | tuple):
        return log
    if isinstance(log, str | bytes | bytearray | Mapping) or not isinstance(log, Iterable):
        hint = " (wrap a prompt as [UserText(text=...)])" if isinstance(log, str) else ""
        raise TypeError(
            f"a log is a list of canonical events ({_EVENT_NAMES}) or StoredEvent records, "
            f"not {type(log).__name__}{hint}"
        )
    return list(log)


def as_events(log: Iterable[object]) -> list[CanonicalEvent]:
    """The bare events of a log that may mix `StoredEvent` records and bare events.

    An item that is neither is a caller's mistake: `TypeError`, naming what it was.
    """
    events: list[CanonicalEvent] = []
    for item in log_items(log):
        if isinstance(item, StoredEvent):
            events.append(item.event)
        elif isinstance(item, _Event):
            events.append(cast(CanonicalEvent, item))
        else:
            raise TypeError(
                f"a log holds canonical events ({_EVENT_NAMES}) or StoredEvent records, "
                f"not {type(item).__name__}: {str(item)[:80]!r}"
            )
    return events


def wire_events(log: Iterable[object]) -> list[WireEvent]:
    """`as_events` as a renderer sends them: each `Compaction` as its user-side context."""
    return [
        event.context if type(event) is Compaction else cast(WireEvent, event)
        for event in as_events(log)
    ]


def dump_jsonl(records: Iterable[StoredEvent]) -> bytes:
    """A log as JSON lines, one `StoredEvent` per line, each line ending in a newline."""
    return b"".join(_stored().dump_json(record) + b"\n" for record in records)


def load_jsonl(data: bytes | str) -> list[StoredEvent]:
    """Parse JSON lines written by `dump_jsonl` (blank lines are ignored)."""
    raw = data.encode() if isinstance(data, str) else data
    return [_stored().validate_json(line) for line in raw.splitlines() if line.strip()]


class Usage(_Frozen):
    """Tokens one call used. ``input`` counts every prompt token, cached or not.

    Usages add up field by field (``sum(usages)``, or ``total += usage``), so a
    task's total is the sum of its calls'; costs add up as ``Decimal`` s from each call's
    `CallInfo` (``sum(c.cost_usd for c in calls if c.cost_usd is not None)``).
    """

    input: NonNegativeInt = 0
    output: NonNegativeInt = 0
    cache_read: NonNegativeInt = 0
    cache_write: NonNegativeInt = 0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            input=self.input + other.input,
            output=self.output + other.output,
            cache_read=self.cache_read + other.cache_read,
            cache_write=self.cache_write + other.cache_write,
        )

    def __radd__(self, other: int) -> "Usage":
        # sum() starts from 0: `sum(usages)` is the total without a start value.
        if other == 0:
            return self
        return NotImplemented


class CallInfo(_Frozen):
    """What the proxy said about one call: its id, its cost and where it was served.

    Read from the proxy's ``x-litellm-*`` response headers; every field is ``None`` when its
    header is absent (a plain OpenAI-compatible server sends none of them).
    ``cost_source`` says where ``cost_usd`` came from: ``"proxy"`` (its cost header) or
    ``"prices"`` (the model's token prices times the usage, for streamed replies, whose
    headers are sent before the cost is known).
    """

    call_id: str | None = None
    cost_usd: Decimal | None = None
    cost_source: Literal["proxy", "prices"] | None = None
    key_spend_usd: Decimal | None = None
    model_group: str | None = None
    model_id: str | None = None
    proxy_duration_ms: float | None = None
    attempted_retries: NonNegativeInt | None = None
    attempted_fallbacks: NonNegativeInt | None = None


class Completion(_Frozen):
    """A parsed reply: its canonical events, usage, stop reason, the model it named, and
    what the proxy said about the call (``call``: set by the clients, None from a parser)."""

    events: list[CanonicalEvent]
    usage: Usage
    stop_reason: str | None = None
    response_model: str | None = None
    call: CallInfo | None = None
    #: The reply's own id as the server sent it (clipped to 256 characters), for tracing.
    response_id: str | None = None
    #: Output tokens spent reasoning, where the reply reports them apart (chat route).
    reasoning_tokens: int | None = None
