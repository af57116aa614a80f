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

from nisse_llm.routes.openai_responses import OPENAI_RESPONSES
from nisse_llm.transport.clients import AsyncRouteClient, SyncRouteClient

__all__ = ["RESPONSES_ROUTE", "AsyncOpenAIResponsesClient", "OpenAIResponsesClient"]


#: The route's descriptor, under its former name here.
RESPONSES_ROUTE = OPENAI_RESPONSES


class OpenAIResponsesClient(SyncRouteClient):
    """The OpenAI Responses route: ``POST {base}/v1/responses`` (current OpenAI reasoning
    models with tools, their reasoning carried from turn to turn)."""

    ROUTE = OPENAI_RESPONSES


class AsyncOpenAIResponsesClient(AsyncRouteClient):
    """`OpenAIResponsesClient` for asyncio."""

    ROUTE = OPENAI_RESPONSES
