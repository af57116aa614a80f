"""The clients' former home, kept for imports written against it: the clients live in
`nisse_llm.transport.clients` (which says what this module exports), the routers in
`nisse_llm.transport.routers`."""

from nisse_llm.transport.clients import *  # noqa: F403
from nisse_llm.transport.clients import __all__ as _clients
from nisse_llm.transport.routers import AsyncRoleRouter, RoleRouter

__all__ = [*_clients, "AsyncRoleRouter", "RoleRouter"]
