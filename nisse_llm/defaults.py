"""Every default of the package in one place: the settings' fields, the clients' and
routers' keywords and the routes read them from here, so they cannot drift apart."""

from __future__ import annotations

from typing import Final, Literal

#: Output ceiling per request. Generous: output is billed by what is produced, not by the
#: ceiling, and a ceiling too low fails quietly (a plan observed at 4,064 of 4,096).
MAX_OUTPUT_TOKENS: Final = 16384
#: Read timeout of one request on the chat completions route.
CHAT_TIMEOUT_S: Final = 120.0
#: Read timeout on the messages and Responses routes: delegations run long turns.
PASSTHROUGH_TIMEOUT_S: Final = 300.0
#: Seconds to wait for a connection to the proxy (settings; a bare client waits its read
#: timeout).
CONNECT_TIMEOUT_S: Final = 10.0
#: Seconds a stream may stay silent between chunks.
STREAM_IDLE_TIMEOUT_S: Final = 120.0
#: 429 handling: retries, the wait when the server names none, the longest wait honoured.
RATE_LIMIT_RETRIES: Final = 1
RATE_LIMIT_WAIT_S: Final = 20.0
RATE_LIMIT_WAIT_CAP_S: Final = 60.0
#: Model-string prefixes that take the Anthropic messages passthrough (spec A13).
PASSTHROUGH_PREFIXES: Final[tuple[str, ...]] = ("claude-", "anthropic/")
#: Prompt caching of each request's stable prefix, and its entries' lifetime.
PROMPT_CACHE: Final = True
PROMPT_CACHE_TTL: Final[Literal["5m", "1h"]] = "5m"
#: Count tokens at the proxy before each request.
PREFLIGHT: Final = False
#: Largest reply body read, after decompression. 64 MiB: a 128k-token streamed reply, one
#: delta per token, is under 40 MiB of SSE.
MAX_RESPONSE_BYTES: Final = 64 * 1024 * 1024
#: One attempt of complete(): ten minutes, what Anthropic allows a non-streamed request
#: before it asks for a stream.
CALL_DEADLINE_S: Final = 600.0
#: One attempt of stream(): an hour, a 128k-token reply at 40 tokens a second with room
#: to spare.
STREAM_DEADLINE_S: Final = 3600.0
#: The configuration file looked for in the working directory when none is named.
CONFIG_NAME: Final = "nisse.toml"
#: Compaction keeps the last turns of a log as they are: this many.
KEEP_LAST_TURNS: Final = 2
#: Room a summarised compaction keeps for its summary, and the summary's output ceiling.
SUMMARY_TOKENS: Final = 1024
#: Seconds one MCP tool call may take before it is an error result (and the server restarted).
MCP_TIMEOUT_S: Final = 60.0
#: Largest MCP tool result handed to the model, text and images together; more is cut with a
#: note. 4 MiB: about a million tokens of text, far past any context window.
MCP_MAX_RESULT_BYTES: Final = 4 * 1024 * 1024
#: Largest message read from an MCP server over HTTP (its result is then cut to the size
#: above): a tool's answer is often sent twice, as text and as structured content.
MCP_MAX_MESSAGE_BYTES: Final = 256 * 1024 * 1024
#: Seconds an MCP server may take to start and list its tools.
MCP_START_TIMEOUT_S: Final = 30.0
#: How much of an MCP server's stderr is kept (its tail), for the WARNING of a failure.
MCP_STDERR_BYTES: Final = 64 * 1024
#: Model calls one `Task.run` makes at most before it stops with `RunLimitReached`.
RUN_MAX_STEPS: Final = 50
