"""Former home of `nisse_llm.events.tools`, kept for one release: each name warns and names
its new home."""

from __future__ import annotations

from nisse_llm import _lazy
from nisse_llm.events import tools as _home

__all__ = sorted(_home.__all__)

__getattr__ = _lazy.former_home(__name__, dict.fromkeys(_home.__all__, _home.__name__))
