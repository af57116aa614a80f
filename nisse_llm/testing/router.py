"""`ScriptedRouter`: the real `RoleRouter`, scripted per role, in process (no proxy, no socket).

A test double that cannot drift from the router it stands in for: it *is* a `RoleRouter`
(and `AsyncScriptedRouter` an `AsyncRoleRouter`), built over a generated pin whose roles
each name their own model, with a `ScriptedTransport` that answers each request with the
next turn of the role its model belongs to. So ``complete``, ``stream``, ``complete_as``,
``options=``, ``last_usage``, ``last_call``, ``on_usage`` and ``store=`` run the real
code: bodies are rendered, replies parsed, failures classified, calls recorded.

A turn is a `Reply` (``reply(...)``), a plain string (a text reply), a `Failure` or
`Disconnect` (classified as the real proxy's would be), or an exception, raised as the
request is sent (not recorded as a request).
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Self, TypeAlias, TypeVar

import httpx

from nisse_llm.config.settings import SEED_ROLES, Pin, role_name_problem
from nisse_llm.task.logstore import AsyncTaskStore, TaskStore
from nisse_llm.testing.client import ScriptExhausted
from nisse_llm.testing.script import Script, ScriptedAnswer
from nisse_llm.testing.transport import ScriptedTransport
from nisse_llm.testing.turns import Disconnect, Failure, Reply, Turn, reply
from nisse_llm.transport._client_base import ClientBase
from nisse_llm.transport._router_base import RouterBase
from nisse_llm.transport.clients import (
    ASYNC_CLIENTS,
    SYNC_CLIENTS,
    AsyncRouteClient,
    SyncRouteClient,
)
from nisse_llm.transport.routers import AsyncRoleRouter, RoleRouter

__all__ = ["AsyncScriptedRouter", "RouterTurn", "ScriptedRouter"]

#: What a scripted role may answer: a reply, a text, an error answer, a dropped
#: connection, or an exception to raise.
RouterTurn: TypeAlias = Reply | str | Failure | Disconnect | BaseException

_Client = TypeVar("_Client", bound=ClientBase)
_Store = TypeVar("_Store")

_BASE_URL = "http://scripted.test"
_TOKEN = "sk-scripted-router"


class _RoleTurns:
    """Each role's queue of turns; which role a model belongs to."""

    def __init__(self, models: Mapping[str, str]) -> None:
        self._lock = threading.Lock()
        self.models = dict(models)
        self._roles = {model: role for role, model in models.items()}
        self._queues: dict[str, deque[RouterTurn]] = {role: deque() for role in models}

    def add(self, role: str, turns: Iterable[RouterTurn]) -> None:
        if isinstance(turns, str | Reply | Failure | Disconnect | BaseException):
            raise TypeError(
                f"the turns of role {role!r} must be a list of turns, got one turn: write "
                f"[{turns!r}]"
            )
        if role not in self._queues:
            raise ValueError(
                f"the router has no role {role!r}; its roles are {', '.join(self._queues)} "
                "(name a role when building the router to add it)"
            )
        checked = []
        for turn in turns:
            if not isinstance(turn, Reply | str | Failure | Disconnect | BaseException):
                raise TypeError(
                    f"not a router turn: {turn!r}; a turn is reply(...), a string, "
                    "failure(...), Disconnect() or an exception"
                )
            checked.append(turn)
        with self._lock:
            self._queues[role].extend(checked)

    def pending(self, role: str) -> int:
        with self._lock:
            return len(self._queues[role])

    def next_for(self, body: bytes) -> Turn:
        """The next turn of the role whose model ``body`` names; raises an exception turn."""
        try:
            model = json.loads(body).get("model")
        except (ValueError, AttributeError):
            model = None
        role = self._roles.get(model) if isinstance(model, str) else None
        if role is None:
            raise ScriptExhausted(f"ScriptedRouter got a request for no role's model: {model!r}")
        with self._lock:
            turn = self._queues[role].popleft() if self._queues[role] else None
        if turn is None:
            raise ScriptExhausted(
                f"ScriptedRouter has no turn left for role {role!r}: script it with "
                f"router.add({role!r}, ...)"
            )
        if isinstance(turn, BaseException):
            raise turn
        return reply(turn) if isinstance(turn, str) else turn


class _RoleTransport(ScriptedTransport):
    """A `ScriptedTransport` taking each request's turn from its role's queue."""

    def __init__(self, turns: _RoleTurns, script: Script) -> None:
        super().__init__(script)
        self._turns = turns

    def answer(self, request: httpx.Request, body: bytes) -> ScriptedAnswer:
        """The turn of the role the request's model belongs to (model listings and the
        like are answered by the script)."""
        turn = self._turns.next_for(body) if request.method == "POST" else None
        return self.script.respond(
            request.method,
            request.url.raw_path.decode(),
            request.headers.multi_items(),
            body,
            turn=turn,
        )


def _models(
    turns: Mapping[str, Iterable[RouterTurn]], models: Mapping[str, str] | None
) -> dict[str, str]:
    """Role -> model for the generated pin: the seeds' roles and every role named, each
    with its own model (``scripted-<role>`` unless ``models`` names one)."""
    chosen = dict(models or {})
    roles = dict.fromkeys([*SEED_ROLES, *turns, *chosen])
    for role in roles:
        problem = role_name_problem(role)
        if problem is not None:
            raise ValueError(f"{role!r} is not a role name: {problem}")
    found = {role: chosen.get(role, f"scripted-{role}") for role in roles}
    shared = sorted({m for m in found.values() if list(found.values()).count(m) > 1})
    if shared:
        raise ValueError(
            f"each role needs its own model to be scripted apart, but {', '.join(shared)} "
            "serves several; name distinct models"
        )
    return found


def _pin(models: Mapping[str, str]) -> Pin:
    return Pin.model_validate({"base_url": _BASE_URL, "token": _TOKEN, "roles": dict(models)})


class _Scripted(RouterBase[_Client, _Store]):
    """What both scripted routers add to the real ones: a pin made for the roles named,
    their scripted turns, and the script every request is recorded in."""

    #: The client class of each route: the sync or the async ones.
    _CLIENTS: ClassVar[Mapping[str, type[Any]]]
    _turns: _RoleTurns
    _script: Script

    def __init__(
        self,
        turns: Mapping[str, Iterable[RouterTurn]] | None = None,
        *,
        models: Mapping[str, str] | None = None,
        store: _Store | None = None,
        **options: Any,
    ) -> None:
        pin, self._turns, self._script, transport = _build(turns, models)
        options = {**options, "transport": transport}
        clients = self._clients_for(pin, self._CLIENTS, options)
        super().__init__(pin, clients, store=store, client_options=options)

    @classmethod
    def from_pin(cls, pin: Pin, *, store: Any = None, **options: Any) -> Self:
        """Not available: a scripted router makes its own pin; build it with
        ``ScriptedRouter({role: turns}, models=...)``."""
        raise TypeError(
            f"{cls.__name__} makes its own pin: build it with {cls.__name__}({{role: [turns]}}, "
            "models={role: model})"
        )

    def add(self, role: str, *turns: RouterTurn) -> Self:
        """Append turns to ``role``'s queue; returns the router for chaining."""
        self._turns.add(role, turns)
        return self

    def pending(self, role: str) -> int:
        """How many of ``role``'s turns are still queued."""
        return self._turns.pending(role)

    @property
    def script(self) -> Script:
        """The script every request was recorded in (``script.requests[i].json`` is the
        body sent)."""
        return self._script

    def requests_for(self, role: str) -> list[Any]:
        """The requests made for ``role``, oldest first (`RecordedRequest`s)."""
        model = self._turns.models[role]
        return [r for r in self._script.requests if r.model == model]


def _build(
    turns: Mapping[str, Iterable[RouterTurn]] | None, models: Mapping[str, str] | None
) -> tuple[Pin, _RoleTurns, Script, _RoleTransport]:
    given = dict(turns or {})
    queues = _RoleTurns(_models(given, models))
    for role, role_turns in given.items():
        queues.add(role, role_turns)
    script = Script()
    return _pin(queues.models), queues, script, _RoleTransport(queues, script)


class ScriptedRouter(_Scripted[SyncRouteClient, TaskStore], RoleRouter):
    """A `RoleRouter` answering from turns scripted per role.

    ``ScriptedRouter({"planner": [reply("Plan: ...")], "executor": [reply(ToolUse(...)),
    "Done."]})``; the seeds' four roles always exist, and any role named is added.
    ``models`` names a role's model (``{"planner": "claude-sonnet-4-6"}`` takes the
    messages route; the default ``scripted-<role>`` takes chat completions); ``store``
    and ``options`` (``on_usage``, ``sleep``...) are the real router's. More calls than
    a role's turns raise `ScriptExhausted`.
    """

    _CLIENTS = SYNC_CLIENTS


class AsyncScriptedRouter(_Scripted[AsyncRouteClient, AsyncTaskStore], AsyncRoleRouter):
    """`ScriptedRouter` for asyncio: an `AsyncRoleRouter` answering from scripted turns (its
    ``store`` an `AsyncTaskStore`)."""

    _CLIENTS = ASYNC_CLIENTS
