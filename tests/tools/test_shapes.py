"""Wrong shapes where tools or an answer type belong: a Toolbox and plain functions are
accepted as tools; anything else, a non-model answer type, an unschemable parameter and a
nameless function each raise an error naming what was passed and what to pass."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from nisse_llm import LiteLLMClient, RoleRouter, Toolbox, ToolSpec, UserText
from nisse_llm.events.canonical import as_tool_specs
from nisse_llm.testing import Script, ScriptedClient, ScriptedRouter, ScriptedTransport, reply

LOG = [UserText(text="Go.")]


def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: The file's path.
    """
    return path


class Answer(BaseModel):
    """An answer."""

    value: str


def test_a_toolbox_and_functions_are_accepted_as_tools() -> None:
    """A Toolbox means its specs and a function means ToolSpec.from_function: the same
    tools reach the wire as from ``tools.specs``."""
    box = Toolbox([read_file])
    script = Script().chat(reply("a"), reply("b"), reply("c"))
    with LiteLLMClient("http://proxy.test", "sk-test", transport=ScriptedTransport(script)) as c:
        c.complete(LOG, box.specs, "gpt-5.4-mini")
        c.complete(LOG, box, "gpt-5.4-mini")
        c.complete(LOG, [read_file], "gpt-5.4-mini")
    sent = [request.json["tools"] for request in script.requests]
    assert sent[0] == sent[1] == sent[2]
    assert sent[0][0]["function"]["name"] == "read_file"


def test_a_router_takes_a_toolbox_too() -> None:
    """Through a router, passing the Toolbox itself works as its specs do."""
    box = Toolbox([read_file])
    with ScriptedRouter({"executor": ["ok"]}) as llm:
        llm.complete("executor", LOG, box)
        (sent,) = llm.requests_for("executor")
    assert [t["function"]["name"] for t in sent.json["tools"]] == ["read_file"]


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        (
            read_file,
            "tools must be a list of tools or a Toolbox, got the function read_file: pass it "
            "in a list, [...]; a tool is a ToolSpec, a dict in one of the three tool shapes, "
            "or a function (ToolSpec.from_function)",
        ),
        (
            ToolSpec.from_function(read_file),
            "tools must be a list of tools or a Toolbox, got the ToolSpec 'read_file': pass "
            "it in a list, [...];",
        ),
        (3, "tools must be a list of tools or a Toolbox, got int;"),
        ([3], "tools[0] is 3, not a tool: a tool is a ToolSpec, a dict"),
        ([Answer], "tools[0] is <class "),
    ],
)
def test_other_shapes_are_a_type_error_naming_the_fix(tools: Any, message: str) -> None:
    """A lone tool, a number, or a list holding a non-tool is a TypeError saying what to pass."""
    with pytest.raises(TypeError) as caught:
        as_tool_specs(tools)
    assert str(caught.value).startswith(message)
    if tools == [Answer]:
        assert str(caught.value).endswith("for a model's fields, pass ToolSpec.from_model(Answer)")


@pytest.mark.parametrize(
    ("output_type", "message"),
    [
        (
            str,
            "complete_as needs a pydantic model class for the answer, got <class 'str'>: wrap "
            "the answer in a model, e.g. class Answer(BaseModel): value: str, then "
            "complete_as(Answer, ...) and read .value.value",
        ),
        (
            Answer(value="x"),
            "complete_as needs a pydantic model class for the answer, got an instance of "
            "Answer: pass the class itself, complete_as(Answer, ...)",
        ),
    ],
)
def test_complete_as_needs_a_model_class(output_type: Any, message: str) -> None:
    """A non-model answer type is a TypeError before anything is sent, on clients, routers
    and the scripted client."""
    script = Script()
    with LiteLLMClient("http://proxy.test", "sk-test", transport=ScriptedTransport(script)) as c:
        with pytest.raises(TypeError) as caught:
            c.complete_as(output_type, LOG, None, "gpt-5.4-mini")
        assert str(caught.value) == message
    with ScriptedRouter() as llm, pytest.raises(TypeError, match="pydantic model class"):
        llm.complete_as(output_type, "executor", LOG, None)
    assert isinstance(llm, RoleRouter)
    with pytest.raises(TypeError, match="pydantic model class"):
        ScriptedClient().complete_as(output_type, LOG, None, "m")
    assert script.requests == []


class Opaque:
    """A class pydantic cannot describe."""


def apply(fn: Callable[[int], int], x: int) -> int:
    """Apply a function."""
    return fn(x)


def use(thing: Opaque) -> str:
    """Use a thing."""
    return str(thing)


@pytest.mark.parametrize(
    ("fn", "tool", "parameter", "shown"),
    [(apply, "apply", "fn", "Callable"), (use, "use", "thing", "Opaque")],
)
def test_a_parameter_without_a_json_schema_names_the_tool_and_parameter(
    fn: Callable[..., Any], tool: str, parameter: str, shown: str
) -> None:
    """A Callable or an arbitrary class as a parameter is a TypeError naming both."""
    expected = (
        f"tool {tool!r}: parameter {parameter!r} ({shown}) has no JSON Schema, so a model "
        "cannot be told how to pass it: give it a JSON type (str, int, float, bool, a list "
        "or dict of them, an enum, a pydantic model), or take it out of the tool's "
        "signature (bind it inside a wrapper function the tool calls)"
    )
    for build in (ToolSpec.from_function, lambda f: Toolbox([f])):
        with pytest.raises(TypeError) as caught:
            build(fn)
        assert str(caught.value) == expected


def test_a_lambda_is_told_how_to_be_named() -> None:
    """A lambda's error names the API that names it, and it works as told."""
    add = lambda a, b: a + b  # noqa: E731 - the case under test
    with pytest.raises(ValueError, match="must match") as caught:
        Toolbox([add])
    assert str(caught.value).endswith(
        "tool name '<lambda>' must match ^[a-zA-Z0-9_-]{1,64}$; name it: "
        "ToolSpec.from_function(fn, name='read_file') for a spec, or, for a Toolbox (which "
        "names each tool after its function), define it with def read_file(...)"
    )
    assert ToolSpec.from_function(add, name="add").name == "add"
