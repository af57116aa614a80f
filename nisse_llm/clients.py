"""The clients' former home, kept for imports written against it for one release: each
name warns and names its new home (the clients in `nisse_llm.transport.clients`, the
routers in `nisse_llm.transport.routers`)."""

from __future__ import annotations

from nisse_llm import _lazy
from nisse_llm.transport import clients as _clients
from nisse_llm.transport import routers as _routers

# Name -> its new home.
_HOMES = {
    **dict.fromkeys(_clients.__all__, _clients.__name__),
    **dict.fromkeys(_routers.__all__, _routers.__name__),
}

__all__ = sorted(_HOMES)

__getattr__ = _lazy.former_home(__name__, _HOMES)
