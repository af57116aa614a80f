"""A fourth route that is a copy of the chat route under a new name and path, defined
wholly in the test tree: its descriptor, renderer, stream accumulator, clients and
testing-kit replies, each extending the package's public classes and hooks."""

from __future__ import annotations

from nisse_llm.render.openai_chat import OpenAIChatRenderer
from nisse_llm.routes import RouteDescriptor
from nisse_llm.stream.chat import OpenAIChatStreamAccumulator
from nisse_llm.testing.route_kits import OPENAI_CHAT_KIT
from nisse_llm.transport.clients import AsyncRouteClient, SyncRouteClient

HERE = __name__
NAME = "chat_copy_fourth_route"
PATH = "/v1/copy/chat/completions"

CHAT_COPY = RouteDescriptor(
    name=NAME,
    path=PATH,
    auth_headers=lambda token: {"authorization": f"Bearer {token}"},
    stream_fields=b',"stream":true,"stream_options":{"include_usage":true}}',
    renderer=f"{HERE}:ChatCopyRenderer",
    accumulator=f"{HERE}:ChatCopyStreamAccumulator",
    clients=(f"{HERE}:ChatCopyClient", f"{HERE}:AsyncChatCopyClient"),
    kit=f"{HERE}:CHAT_COPY_KIT",
    max_stop_sequences=4,
    modules=(HERE,),
)


class ChatCopyRenderer(OpenAIChatRenderer):
    """The chat route's bodies, its rules decided by the copy's descriptor."""

    route = CHAT_COPY


class ChatCopyStreamAccumulator(OpenAIChatStreamAccumulator):
    """The chat route's stream, reported under the copy's name."""

    route = NAME


class ChatCopyClient(SyncRouteClient):
    """The package's exchange over `CHAT_COPY`."""

    ROUTE = CHAT_COPY


class AsyncChatCopyClient(AsyncRouteClient):
    """`ChatCopyClient` for asyncio."""

    ROUTE = CHAT_COPY


#: The scripted upstream answers the copy as it answers the chat route.
CHAT_COPY_KIT = OPENAI_CHAT_KIT
