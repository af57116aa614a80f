"""The OpenAI Responses route's clients: ``POST {base}/v1/responses``, statelessly.

The same clients as the other routes (`nisse_llm.transport.clients`: one transport core, the same
methods, limits, deadlines, retries and error table); only the route differs. Every
request carries the whole log with ``store: false`` and, for models that reason,
``include: ["reasoning.encrypted_content"]``; the reasoning items a reply holds come back
as `Reasoning` events and go back, as received, on the next request to the same model
(`nisse_llm.render.openai_responses`). A module of its own, so a program that never takes
this route loads none of it.
"""

from __future__ import annotations

from nisse_llm import defaults
from nisse_llm.transport.clients import AsyncRouteClient, SyncRouteClient
from nisse_llm.transport.core import PartsRenderer, RouteSpec

__all__ = ["RESPONSES_ROUTE", "AsyncOpenAIResponsesClient", "OpenAIResponsesClient"]


def _responses_renderer() -> PartsRenderer:
    from nisse_llm.render.openai_responses import OpenAIResponsesRenderer

    return OpenAIResponsesRenderer()


#: A reasoning model thinks before it answers: the read timeout is the passthrough's.
RESPONSES_ROUTE = RouteSpec(
    name="openai_responses",
    path="/v1/responses",
    default_timeout_s=defaults.PASSTHROUGH_TIMEOUT_S,
    renderer=_responses_renderer,
    auth_headers=lambda token: {"authorization": f"Bearer {token}"},
)


class OpenAIResponsesClient(SyncRouteClient):
    """The OpenAI Responses route: ``POST {base}/v1/responses`` (current OpenAI reasoning
    models with tools, their reasoning carried from turn to turn)."""

    ROUTE = RESPONSES_ROUTE


class AsyncOpenAIResponsesClient(AsyncRouteClient):
    """`OpenAIResponsesClient` for asyncio."""

    ROUTE = RESPONSES_ROUTE
