"""Renderers: canonical log -> wire body, and wire response -> canonical events (pure).

Each route module offers one renderer class, a `Renderer` (the surface they share):
``render`` (a dict, the seeds' call shape), ``render_request`` (the typed request
model), ``render_bytes`` (the hot path: the same body, encoded, byte-identical to
``render_request(...).model_dump_json(exclude_none=True)``), and ``parse``. A call's
parameters travel as one value, `CallParams`; a route's renderer fills the public hooks
`Renderer.encode_parts` and `Renderer.reply_parser`.
"""

from __future__ import annotations

from nisse_llm.render._base import Renderer
from nisse_llm.render.call import CallParams

__all__ = ["CallParams", "Renderer"]
