"""Without `instrument()` nothing of OpenTelemetry is imported, whatever the agent does."""

from __future__ import annotations

import json
import subprocess
import sys

_PROGRAM = """
import asyncio, importlib.metadata, json, sys
assert importlib.metadata.version("opentelemetry-api")  # installed, so it could be loaded
from nisse_llm import AsyncAnthropicPassthroughClient, LiteLLMClient, Toolbox, UserText
from nisse_llm.testing import Script, ScriptedTransport, ToolUse, reply

def read_file(path: str) -> str:
    '''Read a file.'''
    return path

script = Script().chat(reply(ToolUse("read_file", {"path": "a"})), reply("streamed"))
script.messages(reply("async"))
with LiteLLMClient("http://proxy.test", "sk-x", transport=ScriptedTransport(script)) as c:
    Toolbox([read_file]).run(c.complete([UserText(text="hi")], None, "gpt-x"))
    with c.stream([UserText(text="hi")], None, "gpt-x") as s:
        list(s)

async def main():
    async with AsyncAnthropicPassthroughClient(
        "http://proxy.test", "sk-x", transport=ScriptedTransport(script)
    ) as c:
        await c.complete([UserText(text="hi")], None, "claude-x")

asyncio.run(main())
before = sorted(m for m in sys.modules if m.startswith(("opentelemetry", "nisse_llm.telemetry")))
import nisse_llm
nisse_llm.instrument()
after = "opentelemetry.trace" in sys.modules
print(json.dumps({"before": before, "after": after}))
"""


def test_an_uninstrumented_agent_imports_no_opentelemetry() -> None:
    """Calls, a stream, an async call and a tool run load no OpenTelemetry module;
    instrument() does."""
    out = subprocess.run(
        [sys.executable, "-c", _PROGRAM], capture_output=True, text=True, check=True
    )
    seen = json.loads(out.stdout)
    assert seen == {"before": [], "after": True}
