"""Check a configuration against the live proxy, spending no tokens: what
``nisse-llm config check --online`` runs, and what an agent can run at task start.

Three questions, in order: does the proxy answer; does it accept the token; and, for each
role, is its model served (``GET /v1/models``), does the role's output ceiling fit the
model's ``max_output_tokens`` and, when the role asks for reasoning, does the model's info
say it supports it (``GET /v1/model/info``); and can the model rules (`nisse_llm.config.model_rules`)
place the role's model or its ``like``. A limit or capability the proxy does not know
is reported as unknown, never as passing. Nothing here sends a completion.

`judge` is pure (the verdicts from what the proxy said); `check_online` and
`acheck_online` ask the proxy through a router built from the pin, sync or async.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass
from operator import methodcaller
from typing import Any, Literal

from nisse_llm._drive import adrive, drive
from nisse_llm.config.routing import Route
from nisse_llm.config.settings import Pin
from nisse_llm.errors import AuthenticationFailed, LLMError, UpstreamUnavailable
from nisse_llm.wire.models_info import ModelInfo

__all__ = ["OnlineReport", "RoleCheck", "acheck_online", "check_online", "judge"]

Verdict = Literal["ok", "unknown", "fail"]


@dataclass(frozen=True, slots=True)
class RoleCheck:
    """One role's verdict: ``ok``, ``unknown`` (served, but a limit is not known), or
    ``fail``; ``notes`` say why, one line each."""

    role: str
    model: str
    route: Route
    ceiling: int
    served: bool
    verdict: Verdict
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class OnlineReport:
    """What the proxy said about a configuration.

    ``reachable`` is False when the proxy could not be reached (``error`` says why);
    ``token_accepted`` is False when it refused the token; ``roles`` holds one `RoleCheck`
    per role once both hold.
    """

    base_url: str
    reachable: bool
    token_accepted: bool
    roles: tuple[RoleCheck, ...] = ()
    error: LLMError | None = None

    @property
    def ok(self) -> bool:
        """True when the proxy answered, took the token and no role failed."""
        return (
            self.reachable
            and self.token_accepted
            and all(check.verdict != "fail" for check in self.roles)
        )


def judge(pin: Pin, served: list[str], infos: Mapping[str, ModelInfo | None]) -> OnlineReport:
    """The verdicts for every role of ``pin`` from the proxy's model list and model infos."""
    return OnlineReport(
        base_url=pin.base_url,
        reachable=True,
        token_accepted=True,
        roles=tuple(_role_check(pin, role, set(served), infos) for role in pin.roles.names),
    )


def _role_check(
    pin: Pin, role: str, served: set[str], infos: Mapping[str, ModelInfo | None]
) -> RoleCheck:
    model = pin.model_for(role)
    options = pin.options_for(role)
    ceiling = (options.max_output_tokens if options else None) or pin.max_output_tokens
    reasoning = options.reasoning if options else None
    failures: list[str] = []
    unknowns: list[str] = []
    if model not in served:
        failures.append(f"the proxy does not serve {model} (GET /v1/models)")
    info = infos.get(model)
    limit = info.max_output_tokens if info else None
    if limit is None:
        unknowns.append(f"the proxy knows no output limit for {model}")
    elif ceiling > limit:
        failures.append(
            f"output ceiling {ceiling} exceeds {model}'s max_output_tokens {limit}; "
            f"lower roles.{role}.max_output_tokens or llm.max_output_tokens"
        )
    if reasoning is not None and reasoning != "off":
        supports = info.supports_reasoning if info else None
        if supports is False:
            failures.append(
                f"reasoning {reasoning!r} is asked of {model}, whose info says it does not "
                f'support reasoning; set roles.{role}.reasoning = "off" or pick another model'
            )
        elif supports is None:
            unknowns.append(f"the proxy does not say whether {model} supports reasoning")
    unknowns += _placement(pin, role, model, options.like if options else None)
    verdict: Verdict = "fail" if failures else "unknown" if unknowns else "ok"
    return RoleCheck(
        role=role,
        model=model,
        route=pin.route(role),
        ceiling=ceiling,
        served=model in served,
        verdict=verdict,
        notes=(*failures, *unknowns),
    )


def _placement(pin: Pin, role: str, model: str, like: str | None) -> list[str]:
    """A note when no row of the model rules places the role's model (or its ``like``)."""
    from nisse_llm.config.option_rules import request_rules

    rules = request_rules(model, like, route=pin.route(role), prefixes=pin.passthrough_prefixes)
    if rules.placed:
        return []
    if like is not None:
        return [
            f"roles.{role}.like = {like!r} is a model the model rules cannot place: the role "
            f"follows the {rules.family} defaults; name a model the rules list"
        ]
    return [
        f"the model rules cannot place {model}: the role follows the {rules.family} defaults; "
        f"if it is an alias, set roles.{role}.like to the model it stands for"
    ]


def _refusal_report(exc: LLMError, pin: Pin) -> OnlineReport:
    """The report for a failure of the first request: unreachable, or the token refused;
    any other failure is raised again."""
    if isinstance(exc, UpstreamUnavailable):
        return OnlineReport(pin.base_url, reachable=False, token_accepted=False, error=exc)
    if isinstance(exc, AuthenticationFailed):
        return OnlineReport(pin.base_url, reachable=True, token_accepted=False, error=exc)
    raise exc


def _questions(pin: Pin) -> Generator[methodcaller, Any, OnlineReport]:
    """The check as a dialogue with one of the router's clients: it yields each question
    (a call of a client method) and is sent the answer (sans-I/O: the sync and async
    checks drive it)."""
    try:
        served = yield methodcaller("served_models")
    except LLMError as exc:
        return _refusal_report(exc, pin)
    models = {pin.model_for(role) for role in pin.roles.names}
    infos = {}
    for model in sorted(models):
        infos[model] = yield methodcaller("model_info", model)
    return judge(pin, served, infos)


def check_online(pin: Pin, **client_options: Any) -> OnlineReport:
    """Ask the proxy about ``pin`` (see the module docstring); ``client_options`` go to the
    router's clients (a transport, a sleep). Errors other than an unreachable proxy or a
    refused token propagate."""
    from nisse_llm.transport.routers import RoleRouter

    with RoleRouter.from_pin(pin, **client_options) as router:
        client = router.client_for(pin.roles.names[0])
        return drive(_questions(pin), lambda ask: ask(client))


async def acheck_online(pin: Pin, **client_options: Any) -> OnlineReport:
    """`check_online` for async code: the same questions through an async router."""
    from nisse_llm.transport.routers import AsyncRoleRouter

    async with AsyncRoleRouter.from_pin(pin, **client_options) as router:
        client = router.client_for(pin.roles.names[0])
        return await adrive(_questions(pin), lambda ask: ask(client))
