"""Role routers: the pin resolves a role to its model, the model to its route's client.

`RoleRouter` (and `AsyncRoleRouter`) holds one client per route the pin's roles use, each
with its own connection pool, and layers the role's profile under each call's options.
With a task file (``store=``) it records every call as it starts and as it ends. With a
`CompactionPolicy` (``compaction=``) it compacts a call's log near the model's window.
`AsyncRoleRouter` (`nisse_llm.transport._async.routers`) is the one source of
`RoleRouter`, generated from it by ``scripts/gen_sync.py``.
"""

from __future__ import annotations

from nisse_llm.transport._async.routers import AsyncRoleRouter
from nisse_llm.transport._sync.routers import RoleRouter

__all__ = ["AsyncRoleRouter", "RoleRouter"]
