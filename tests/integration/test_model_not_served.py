"""A model the real proxy does not serve is `ModelNotServed`, naming the model and the role,
on both routes, for complete and stream, and nothing reaches the upstream."""

from __future__ import annotations

import pytest

from nisse_llm.config.settings import Pin
from nisse_llm.errors import LLMError, ModelNotServed
from nisse_llm.events.canonical import UserText
from nisse_llm.testing import Script
from nisse_llm.testing.proxy import LiteLLMProxy
from nisse_llm.transport.routers import RoleRouter
from tests.integration.helpers import client_for

pytestmark = pytest.mark.proxy

HELLO = [UserText(text="Say hello.")]


def _pin(proxy: LiteLLMProxy) -> Pin:
    return Pin.model_validate(
        {
            "base_url": proxy.base_url,
            "token": proxy.token,
            "roles": {
                "executor": "gpt-5.4-nano",
                "planner": "claude-nowhere-9",
                "delegate": "gpt-scripted",
                "consultant": "claude-scripted",
            },
        }
    )


@pytest.mark.parametrize(
    ("role", "model", "where"),
    [
        ("executor", "gpt-5.4-nano", "/v1/responses"),  # its default route
        ("planner", "claude-nowhere-9", "/v1/messages"),
    ],
)
def test_a_routers_unserved_model_names_the_role(
    proxy: LiteLLMProxy, script: Script, role: str, model: str, where: str
) -> None:
    """Through the router, the error carries the model, the role and the fix; it is an
    LLMError and nothing reached the upstream."""
    with RoleRouter.from_pin(_pin(proxy)) as router, pytest.raises(ModelNotServed) as caught:
        router.complete(role, HELLO, None)
    error = caught.value
    assert isinstance(error, LLMError)
    assert (error.model, error.role, error.status) == (model, role, 400)
    assert str(error).startswith(
        f"POST {proxy.base_url}{where}: the proxy does not serve {model!r} for role {role!r} (400): set the role "
        f"{role!r} to a model it serves, or add {model!r} to the proxy's model list"
    )
    assert error.server_message is not None
    assert f"Invalid model name passed in model={model}" in error.server_message
    assert script.requests == []


def test_a_streams_unserved_model_is_model_not_served(proxy: LiteLLMProxy, script: Script) -> None:
    """A stream to an unserved model fails the same way before any delta."""
    with RoleRouter.from_pin(_pin(proxy)) as router:
        stream = router.stream("executor", HELLO, None)
        with pytest.raises(ModelNotServed) as caught, stream:
            list(stream)
    assert (caught.value.model, caught.value.role) == ("gpt-5.4-nano", "executor")
    assert script.requests == []


@pytest.mark.parametrize("route", ["chat", "messages"])
def test_a_direct_clients_unserved_model_has_no_role(
    proxy: LiteLLMProxy, script: Script, route: str
) -> None:
    """A client called directly gets `ModelNotServed` with ``role`` None."""
    with client_for(proxy, route) as h, pytest.raises(ModelNotServed) as caught:  # type: ignore[arg-type]
        h.client.complete(HELLO, None, "claude-unknown-1")
    assert (caught.value.model, caught.value.role) == ("claude-unknown-1", None)
    assert "name a model it serves" in str(caught.value)
