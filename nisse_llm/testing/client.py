"""`ScriptedClient`: the client protocol answered from a list of turns, with no HTTP at all.

For an agent's own unit tests: hand the agent a `ScriptedClient` where it expects a
`LiteLLMClient`, script the model's turns, then assert on the calls it recorded.
A turn is a `Reply` (or a plain string, a text reply) or an exception to raise.
`AsyncScriptedClient` is the one source of `ScriptedClient`, generated from it by
``scripts/gen_sync.py``.
"""

from __future__ import annotations

from nisse_llm.testing._async.client import AsyncScriptedClient
from nisse_llm.testing._scripted import ClientTurn, ScriptedCall, ScriptExhausted
from nisse_llm.testing._sync.client import ScriptedClient

__all__ = ["AsyncScriptedClient", "ClientTurn", "ScriptExhausted", "ScriptedCall", "ScriptedClient"]
