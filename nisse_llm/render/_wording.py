"""Text every route sends on the log's behalf, kept in one place so the routes say the same."""

from __future__ import annotations

__all__ = ["INTERRUPTED_TEXT", "STUB_TOOL_DESCRIPTION", "TOOL_ERROR_PREFIX"]

#: Starts the output of a failed tool run on the OpenAI routes, which have no error flag.
TOOL_ERROR_PREFIX = "[tool error] "

#: The synthetic result of a call that never got one (the chat route prefixes its error mark).
INTERRUPTED_TEXT = (
    "Interrupted: this tool call never returned a result (the run was interrupted), "
    "so its outcome is unknown."
)

#: The description of a tool declared only because earlier turns called it.
STUB_TOOL_DESCRIPTION = (
    "Not offered in this request; declared only because earlier turns called it."
)
