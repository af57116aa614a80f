"""The toolbox's former home, kept for imports written against it for one release: each
name warns and names its new home (`Toolbox` in `nisse_llm.tools`, the text helpers in
`nisse_llm.events.tool_text`)."""

from __future__ import annotations

from nisse_llm import _lazy

# Name -> its new home.
_HOMES = {
    "Toolbox": "nisse_llm.tools",
    "result_text": "nisse_llm.events.tool_text",
    "validation_feedback": "nisse_llm.events.tool_text",
}

__all__ = sorted(_HOMES)

__getattr__ = _lazy.former_home(__name__, _HOMES)
