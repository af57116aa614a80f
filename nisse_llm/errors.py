"""The error tree, every class of it in this one module: each failure says what the
caller must do about it.

::

    LLMError (RuntimeError)    fail the turn: the request or the answer was wrong
    ├── ConfigError            fix the configuration; nothing was sent
    ├── ModelNotServed         the proxy serves no such model: fix the role's model or the proxy
    ├── AuthenticationFailed   the proxy refused the token: fix NISSE_LLM_TOKEN (llm.token)
    ├── RenderError            the canonical log is corrupt; nothing was sent
    │   └── ImageError         an image cannot be sent (format, size, signature)
    ├── ContextWindowExceeded  the log outgrew the model's window: keep the work, shorten
    │                          the log (compact, drop old tool output), call again
    ├── TruncatedResponse      the model hit the output ceiling; raise it or retry the turn
    ├── ModelRefusal           the model declined (refusal or content filter); a failed turn
    ├── OutputValidationError  the answer did not fit the requested type; a failed turn
    ├── RunLimitReached        a task's run hit its step, cost or token limit; the task resumes
    ├── TaskBusy               another driver holds the task's lease: leave the task to it
    ├── TaskClosed             the task was closed: open it again to go on
    ├── TaskDiverged           a reopened task's program asked another call than it recorded
    ├── ApprovalRefused        an approval or denial of a call that awaits none: nothing written
    ├── TaskStoreMisconfigured  the task store refused us (password, privilege, database):
    │                          fix its configuration or grants; retrying will not help
    └── UpstreamUnavailable    keep the work and resume later: not the work's fault
        ├── BudgetExhausted    keep the work; resume after the operator restores the budget
        ├── StreamInterrupted  a streamed reply broke mid-way; what arrived rides along
        └── TaskStoreUnavailable  the task store (database) is down: resume the task later

    The caller's own mistakes, outside the tree (an ``except LLMError`` never hides them):
    UnknownRoleError (ValueError)  a role that does not exist
    TypeError                      a prompt passed where a log belongs, a tool of no known shape

    The task file (`FileTaskStore`), outside the tree: the file, not a model call, is at fault:
    LogCorrupt (Exception)         a line that is not a record: inspect the file by hand
    └── LogTornTail                a crash cut the last line: `repair` it, then append
    LogFileReplaced (OSError)      the path no longer names the file being written
    LogSequenceError (ValueError)  a record's number is not above the last one
    LogDuplicateId (ValueError)    a tool call id used twice, or a call answered twice
    TaskHeaderMissing (LookupError)  no task begun in the file: `begin` one
    TaskPinMismatch (ValueError)   the file was begun with another pin

    InsecureConfigFileWarning (UserWarning)  a token file others can read, or a config
                                             file others can write
    ConfigTypoWarning (UserWarning)  a role or model name a small edit from a known one:
                                     probably misspelt; fix the name

Status, the server's error type and message, the proxy's call id, and any wait the server
asked for ride on the exception so the caller's resume logic can act on them without
parsing text. (The transport's own signals, a reply too large, a deadline passed, an event
too long, live beside the code that raises them and never reach a caller: each becomes one
of the errors above.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# What a broken stream delivered is defined apart and loaded with the first stream error
# (or the first use of its name here), so the error tree itself defines no dataclasses.
if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path

    from nisse_llm._partial import PartialReply, PartialToolCall

__all__ = [
    "ApprovalRefused",
    "AuthenticationFailed",
    "BudgetExhausted",
    "ConfigError",
    "ConfigTypoWarning",
    "ContextWindowExceeded",
    "ImageError",
    "InsecureConfigFileWarning",
    "LLMError",
    "LogCorrupt",
    "LogDuplicateId",
    "LogFileReplaced",
    "LogSequenceError",
    "LogTornTail",
    "ModelNotServed",
    "ModelRefusal",
    "OutputValidationError",
    "PartialReply",
    "PartialToolCall",
    "RenderError",
    "RunLimitReached",
    "StreamInterrupted",
    "TaskBusy",
    "TaskClosed",
    "TaskDiverged",
    "TaskHeaderMissing",
    "TaskPinMismatch",
    "TaskStoreMisconfigured",
    "TaskStoreUnavailable",
    "TruncatedResponse",
    "UnknownRoleError",
    "UpstreamUnavailable",
]


class UnknownRoleError(ValueError):
    """A caller asked for a role that does not exist: a bug in the caller, not a failed call."""

    def __init__(self, role: object, roles: tuple[str, ...]) -> None:
        super().__init__(f"unknown role {role!r}; the roles are {', '.join(roles)}")
        #: The role asked for, and the roles that exist.
        self.role = role
        self.roles = roles


class LLMError(RuntimeError):
    """The request or its answer was wrong: fail the turn and clean up."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        error_type: str | None = None,
        server_message: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        #: HTTP status of the response that caused this, when there was one.
        self.status = status
        #: The server's own error type (``error.type`` in either body shape), if parsed.
        self.error_type = error_type
        #: The server's own error message, truncated and redacted, if parsed.
        self.server_message = server_message
        #: The proxy's id for the call (``x-litellm-call-id``) when a response arrived with
        #: one: what an operator searches the proxy's logs and spend records for.
        self.call_id: str | None = None

    def __str__(self) -> str:
        return self.message


class ConfigError(LLMError):
    """The configuration is incomplete or invalid: fix it; nothing was sent."""

    def __init__(self, message: str, *, problems: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        #: One line per offending key, each naming the TOML key, env variable and source.
        self.problems = problems


class ModelNotServed(LLMError):
    """The proxy serves no model by this name: fix the configuration (the role's model, or
    the proxy's model list); retrying cannot help."""

    def __init__(
        self,
        message: str,
        *,
        model: str,
        role: str | None = None,
        status: int | None = None,
        error_type: str | None = None,
        server_message: str | None = None,
    ) -> None:
        super().__init__(
            message, status=status, error_type=error_type, server_message=server_message
        )
        #: The model name the proxy refused.
        self.model = model
        #: The router role the call was made for (None for a direct client call).
        self.role = role


class AuthenticationFailed(LLMError):
    """The proxy refused the token (401, or 403 for a model the token may not use): fix
    ``NISSE_LLM_TOKEN`` (or ``llm.token``); never retried."""


class RenderError(LLMError):
    """The canonical log cannot be rendered (for example a result without its call)."""


class ContextWindowExceeded(LLMError):
    """The request does not fit the model's context window: keep the work, shorten the log
    (compact it, drop old tool output) and call again; never retried as it is."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        error_type: str | None = None,
        server_message: str | None = None,
        limit_tokens: int | None = None,
        requested_tokens: int | None = None,
    ) -> None:
        super().__init__(
            message, status=status, error_type=error_type, server_message=server_message
        )
        #: The window's size in tokens, when the refusal (or the pre-flight check) stated it.
        self.limit_tokens = limit_tokens
        #: The tokens the request needed, when stated (input, plus the output ceiling where
        #: the provider counts it against the window).
        self.requested_tokens = requested_tokens


class TruncatedResponse(LLMError):
    """The model was cut off at the output ceiling: a failed turn, never a partial success."""


class ModelRefusal(LLMError):
    """The model declined to answer (a refusal or a content filter): a failed turn."""


class UpstreamUnavailable(LLMError):
    """The proxy or provider failed for reasons unrelated to the request: keep the work."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        error_type: str | None = None,
        server_message: str | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(
            message, status=status, error_type=error_type, server_message=server_message
        )
        #: The wait the server asked for, when it asked (also when it was beyond the cap).
        self.retry_after_s = retry_after_s


class BudgetExhausted(UpstreamUnavailable):
    """A spend limit at the proxy is gone: keep the work, never retry, tell the operator."""


class StreamInterrupted(UpstreamUnavailable):
    """The stream broke before its final event (or sent an error): keep the work, resume later."""

    def __init__(
        self,
        message: str,
        *,
        partial: PartialReply,
        error_type: str | None = None,
        server_message: str | None = None,
    ) -> None:
        super().__init__(message, error_type=error_type, server_message=server_message)
        #: Everything that arrived before the break, for diagnosis (never a result to act on).
        self.partial = partial


class TaskStoreUnavailable(UpstreamUnavailable):
    """The task store could not be reached or failed mid-call: keep the work and resume the
    task later; what was acknowledged is kept, nothing after it was."""

    def __init__(self, message: str, *, sqlstate: str | None = None) -> None:
        super().__init__(message)
        #: The database's error code (SQLSTATE), when it sent one.
        self.sqlstate = sqlstate


class TaskBusy(LLMError):
    """Another driver holds the task's lease: leave the task to it (or wait until it ends)."""

    def __init__(
        self, message: str, *, task: str, holder: str | None, since: datetime | None
    ) -> None:
        super().__init__(message)
        #: The task's key (for a task file, its path).
        self.task = task
        #: Who holds the lease (host and process, or the name the holder gave), if known.
        self.holder = holder
        #: When the holder took it, if known.
        self.since = since


class TaskStoreMisconfigured(LLMError):
    """The task store refused the connection or the work for a reason a retry cannot cure (a
    refused password, a missing privilege, a missing database): fix the store's settings or
    grants, then resume the task."""

    def __init__(self, message: str, *, sqlstate: str | None = None) -> None:
        super().__init__(message)
        #: The database's error code (SQLSTATE), when it sent one.
        self.sqlstate = sqlstate


class TaskClosed(LLMError):
    """A method was called on a task after it was closed: nothing ran; open the task again
    (``Task.open``) to go on with it."""


class ApprovalRefused(LLMError):
    """An approval or a denial of a tool call was refused, nothing written: no call of that
    id awaits approval in the task, or it was decided before (``reason`` says which)."""

    def __init__(self, message: str, *, call_id: str, reason: str) -> None:
        super().__init__(message)
        #: The call id the decision named.
        self.call_id = call_id
        #: Why it was refused.
        self.reason = reason


class TaskDiverged(LLMError):
    """A reopened task's program asked, at a point its file recorded, something else than
    the killed run asked there: nothing was written; run the program that began the task,
    or begin a new task.

    ``position`` numbers the program's call (0 first); ``recorded`` and ``asked`` describe
    the recorded call and the one asked now (``"run_as('planner', Plan)"``).
    """

    def __init__(self, message: str, *, position: int, recorded: str, asked: str) -> None:
        super().__init__(message)
        #: Which call of the program diverged (0: its first).
        self.position = position
        #: The call the task file recorded at that point.
        self.recorded = recorded
        #: The call the program asked there now.
        self.asked = asked


class OutputValidationError(LLMError):
    """The model's answer did not validate into the requested type: a failed turn.

    ``raw`` is what the model answered (the answer tool's arguments as JSON, or its text
    when it called no answer tool); ``errors`` is pydantic's ``errors()`` list for it;
    ``attempts`` counts the calls made, repairs included; ``events`` is the whole exchange
    (every call answered, so it can be appended to the log) and ``usage`` its summed usage.
    """

    def __init__(
        self,
        message: str,
        *,
        raw: str,
        errors: list[dict[str, Any]],
        attempts: int = 1,
        events: list[Any] | None = None,
        usage: Any = None,
    ) -> None:
        super().__init__(message)
        #: The answer as the model gave it.
        self.raw = raw
        #: pydantic's error list (``loc``, ``msg``, ``type``, ``input``...) for ``raw``.
        self.errors = errors
        #: How many calls were made, the first and every repair.
        self.attempts = attempts
        #: The canonical events of every attempt, with their tool calls answered.
        self.events: list[Any] = [] if events is None else events
        #: The `Usage` of every attempt, summed (``None`` when no call completed).
        self.usage = usage


class RunLimitReached(LLMError):
    """A task's run stopped at one of its limits: the task file is whole; raise the limit or
    end the task (``run`` again resumes where it stopped).

    ``limit`` names the limit (``"max_steps"``, ``"max_cost_usd"`` or ``"max_tokens"``);
    ``steps``, ``tokens`` and ``cost_usd`` are the run's counts when it stopped.
    """

    def __init__(self, message: str, *, limit: str, steps: int, tokens: int, cost_usd: Any) -> None:
        super().__init__(message)
        #: Which limit was reached.
        self.limit = limit
        #: Model calls the run made (its steps).
        self.steps = steps
        #: Tokens the run's calls used (input and output).
        self.tokens = tokens
        #: The run's cost in USD as the proxy reported it (a ``Decimal``).
        self.cost_usd = cost_usd


def __getattr__(name: str) -> Any:
    if name in ("PartialReply", "PartialToolCall"):
        from nisse_llm import _partial

        return getattr(_partial, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class InsecureConfigFileWarning(UserWarning):
    """A TOML file holding the proxy token can be read by group or others, or any TOML
    file can be written by them (it could redirect ``base_url``, and the token with it)."""


class ConfigTypoWarning(UserWarning):
    """A role name a small edit from another role, or a model no rules row covers a small
    edit from one that a row does: probably misspelt. The message names both."""


class ImageError(RenderError):
    """An image cannot be sent: not a supported format, mislabelled, truncated or over a
    provider limit. ``image`` names it (its place in the log, or the file)."""

    def __init__(self, message: str, *, image: str) -> None:
        super().__init__(message)
        #: Where the image is: "the user image at log position 3", a file path, ...
        self.image = image


class LogCorrupt(Exception):
    """The log file holds a line that is not a valid record: inspect it by hand."""

    def __init__(self, message: str, *, path: Path | str, line: int | None = None) -> None:
        super().__init__(message)
        #: The log file (a database store: the task's URL and key).
        self.path = path
        #: 1-based number of the offending line, when one line is at fault.
        self.line = line


class LogTornTail(LogCorrupt):
    """The log ends in an incomplete line (a crash mid-append): `repair` it, then append."""

    def __init__(self, message: str, *, path: Path, offset: int, tail: bytes) -> None:
        super().__init__(message, path=path)
        #: Byte offset where the torn line starts (the size of the valid prefix).
        self.offset = offset
        #: The torn bytes.
        self.tail = tail


class LogFileReplaced(OSError):
    """The log's path no longer names the file this store writes: nothing was appended.

    The file was renamed away, replaced or deleted after it was opened, or a symlink
    stands at the path. Records appended now would be unreadable through the path.
    """

    def __init__(self, message: str, *, path: Path) -> None:
        super().__init__(message)
        #: The log file's path.
        self.path = path

    def __str__(self) -> str:
        return str(self.args[0])


class LogSequenceError(ValueError):
    """A record's sequence number is not above the last one in the log: nothing was written."""


class LogDuplicateId(ValueError):
    """A tool call id already used, or a call already answered: nothing was written."""


class TaskHeaderMissing(LookupError):
    """The file holds no task header (missing, empty, or events only): `begin` a new task."""

    def __init__(self, message: str, *, path: Path | str) -> None:
        super().__init__(message)
        #: The file that was to hold a task (a database store: the task's URL and key).
        self.path = path


class TaskPinMismatch(ValueError):
    """The task file was begun with another pin: open the right file, or begin a new task."""

    def __init__(self, message: str, *, path: Path | str, stored: str, given: str) -> None:
        super().__init__(message)
        #: The task file (a database store: the task's URL and key).
        self.path = path
        #: The fingerprint in the file's header, and the one `begin` was given.
        self.stored = stored
        self.given = given
