"""The published surface of nisse_llm.testing and its distance from the runtime package."""

from __future__ import annotations

import subprocess
import sys

import nisse_llm.testing

PUBLIC = {
    "AsyncScriptedClient", "AsyncScriptedRouter", "ClientTurn", "Disconnect", "Failure", "Part", "RecordedRequest",
    "RedactedThinking", "Reply", "RequestPredicate", "RouterTurn", "Script", "ScriptExhausted", "ScriptedAnswer", "ScriptedCall",
    "ScriptedClient", "ScriptedRouter", "ScriptedServer", "ScriptedTransport", "Text", "Thinking", "Tokens",
    "ToolUse", "Turn", "anthropic_error_body", "anthropic_failure", "anthropic_message_body",
    "cut_after", "ended_after", "failure", "openai_chat_body", "openai_error_body",
    "openai_failure", "openai_responses_body", "openai_responses_failed_body", "reply",
    "responses_failure", "route_of_path", "slow", "stalled_after", "truncated",
}  # fmt: skip


def test_all_lists_exactly_the_public_names() -> None:
    """``__all__`` is the documented surface, and every name in it resolves."""
    assert set(nisse_llm.testing.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(nisse_llm.testing, name) is not None


def test_importing_nisse_llm_does_not_import_the_testing_package_or_pytest() -> None:
    """``import nisse_llm`` stays lean, and the testing package never needs pytest."""
    code = (
        "import sys, nisse_llm; assert 'nisse_llm.testing' not in sys.modules;"
        "import nisse_llm.testing; bad = {'pytest', 'nisse_llm.testing.proxy'} & set(sys.modules);"
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
