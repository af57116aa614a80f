"""Test doubles for code built on nisse_llm: a scripted upstream and a scripted client.

Script what the model answers, then run your agent against it three ways:

- `ScriptedClient`: the client protocol itself, no HTTP (unit tests of agent logic);
- `ScriptedRouter`: the real `RoleRouter`, its turns scripted per role, in process
  (an agent written against the router, tested as it runs);
- `ScriptedTransport`: an httpx transport for the real clients, in process (tests of
  what goes on the wire);
- `ScriptedServer`: a loopback HTTP server speaking ``/chat/completions``,
  ``/v1/messages`` and ``/v1/responses`` (also ``/responses``), the upstream behind a real LiteLLM proxy
  (`nisse_llm.testing.proxy.LiteLLMProxy`, imported separately).

A script holds one queue of turns per upstream route and records every request::

    script = Script().messages(
        reply("Let me look.", ToolUse("read_file", {"path": "a.py"})),
        anthropic_failure(529, "overloaded_error", "Overloaded"),
    )
    client = AnthropicPassthroughClient("http://proxy.test", "sk-test",
                                        transport=ScriptedTransport(script))
    ...
    script.requests[0].json  # the body the client sent

Nothing here imports pytest; ``import nisse_llm`` does not import this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nisse_llm import _lazy
from nisse_llm.testing.bodies import (
    Part,
    RedactedThinking,
    Text,
    Thinking,
    Tokens,
    ToolUse,
    anthropic_error_body,
    anthropic_message_body,
    openai_chat_body,
    openai_error_body,
    openai_responses_body,
    openai_responses_failed_body,
)
from nisse_llm.testing.client import (
    AsyncScriptedClient,
    ClientTurn,
    ScriptedCall,
    ScriptedClient,
    ScriptExhausted,
)
from nisse_llm.testing.script import (
    RecordedRequest,
    RequestPredicate,
    Script,
    ScriptedAnswer,
    route_of_path,
)
from nisse_llm.testing.server import ScriptedServer
from nisse_llm.testing.transport import ScriptedTransport
from nisse_llm.testing.turns import (
    Disconnect,
    Failure,
    Reply,
    Turn,
    anthropic_failure,
    cut_after,
    ended_after,
    failure,
    openai_failure,
    reply,
    responses_failure,
    slow,
    stalled_after,
    truncated,
)

# The scripted routers load the real routers and clients: on first use only.
if TYPE_CHECKING:
    from nisse_llm.testing.router import AsyncScriptedRouter, RouterTurn, ScriptedRouter

_LAZY = dict.fromkeys(
    ("AsyncScriptedRouter", "RouterTurn", "ScriptedRouter"), "nisse_llm.testing.router"
)

__all__ = [
    "AsyncScriptedClient",
    "AsyncScriptedRouter",
    "ClientTurn",
    "Disconnect",
    "Failure",
    "Part",
    "RecordedRequest",
    "RedactedThinking",
    "Reply",
    "RequestPredicate",
    "RouterTurn",
    "Script",
    "ScriptExhausted",
    "ScriptedAnswer",
    "ScriptedCall",
    "ScriptedClient",
    "ScriptedRouter",
    "ScriptedServer",
    "ScriptedTransport",
    "Text",
    "Thinking",
    "Tokens",
    "ToolUse",
    "Turn",
    "anthropic_error_body",
    "anthropic_failure",
    "anthropic_message_body",
    "cut_after",
    "ended_after",
    "failure",
    "openai_chat_body",
    "openai_error_body",
    "openai_failure",
    "openai_responses_body",
    "openai_responses_failed_body",
    "reply",
    "responses_failure",
    "route_of_path",
    "slow",
    "stalled_after",
    "truncated",
]


__getattr__ = _lazy.lazy_getattr(__name__, _LAZY, globals())
