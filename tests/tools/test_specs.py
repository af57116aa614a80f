"""Tool specs from functions and models: snapshot schemas, docstrings, and the official judges."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel, Field
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from nisse_llm import ToolSpec
from nisse_llm.events.tools import parse_docstring, portable_schema
from tests.tools.judges import judge_spec
from tests.tools.signatures import CORPUS, Point, Shape, Tree


@pytest.fixture
def json_snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(JSONSnapshotExtension)


def _walk(node: Any) -> Any:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_function_spec_snapshot(name: str, json_snapshot: SnapshotAssertion) -> None:
    """Each corpus function's spec (name, description, schema) is the reviewed one."""
    assert ToolSpec.from_function(CORPUS[name]).model_dump() == json_snapshot


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_function_spec_passes_the_official_judges(name: str) -> None:
    """Each corpus spec is valid JSON Schema and a valid tool on both routes' official types."""
    judge_spec(ToolSpec.from_function(CORPUS[name]))


@pytest.mark.parametrize("model", [Point, Shape, Tree], ids=lambda m: m.__name__)
def test_model_spec_snapshot_and_judges(
    model: type[BaseModel], json_snapshot: SnapshotAssertion
) -> None:
    """A model's spec takes its name and docstring by default and passes the judges."""
    spec = ToolSpec.from_model(model)
    assert spec.name == model.__name__
    judge_spec(spec)
    assert spec.model_dump() == json_snapshot


def test_model_spec_takes_a_name_and_description() -> None:
    """``name`` and ``description`` override the class's own."""
    spec = ToolSpec.from_model(Point, name="place_point", description="Place a point.")
    assert (spec.name, spec.description) == ("place_point", "Place a point.")


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_portable_schema_rules(name: str) -> None:
    """No titles, every object with properties closed, no $ref but for recursion."""
    parameters = ToolSpec.from_function(CORPUS[name]).parameters
    for node in _walk(parameters):
        if "properties" in node and isinstance(node.get("properties"), dict):
            assert node["additionalProperties"] is False
    recursive = name == "walk"
    assert ("$defs" in parameters) is recursive
    assert ("'$ref'" in repr(parameters)) is recursive
    schemas = [node for node in _walk(parameters) if "type" in node or "anyOf" in node]
    assert all("title" not in node or "type" not in node["title"] for node in schemas)
    assert all(not isinstance(node.get("title"), str) for node in schemas)


def test_defaults_optionals_and_required() -> None:
    """Parameters without defaults are required; defaults are stated; Optional is nullable."""
    parameters = ToolSpec.from_function(CORPUS["resize"]).parameters
    assert parameters["required"] == ["width"]
    assert parameters["properties"]["height"]["anyOf"] == [{"type": "integer"}, {"type": "null"}]
    assert parameters["properties"]["keep_ratio"]["default"] is True


def test_nested_models_are_inlined() -> None:
    """A nested model's schema appears in place, with its docstring as its description."""
    shape = ToolSpec.from_function(CORPUS["draw"]).parameters["properties"]["shape"]
    assert shape["description"] == "A closed shape."
    assert shape["properties"]["points"]["items"]["properties"]["x"] == {"type": "integer"}


def test_title_named_property_survives() -> None:
    """A property literally named ``title`` is kept: only the keyword is dropped."""

    def book(title: str) -> str:
        """Book it."""
        return title

    assert ToolSpec.from_function(book).parameters["properties"] == {"title": {"type": "string"}}


@pytest.mark.parametrize(
    ("doc", "summary", "params"),
    [
        (
            "Do it.\n\n    Args:\n        a: First.\n        b (int): Second,\n            wrapped.\n    Returns:\n        x\n",
            "Do it.",
            {"a": "First.", "b": "Second, wrapped."},
        ),
        (
            "Do it.\n\nParameters\n----------\na : int\n    First.\nb\n    Second.\n\nReturns\n-------\nint\n    y\n",
            "Do it.",
            {"a": "First.", "b": "Second."},
        ),
        (
            "Do it.\n\n:param a: First.\n:type a: int\n:param int b: Second\n    wrapped.\n:returns: z\n",
            "Do it.",
            {"a": "First.", "b": "Second wrapped."},
        ),
        ("One line\nwrapped.\n\nSecond paragraph.", "One line wrapped.\n\nSecond paragraph.", {}),
        (None, "", {}),
        ("Do it.\n\nExamples:\n    >>> do()\n\nArgs:\n    a: First.", "Do it.", {"a": "First."}),
    ],
    ids=["google", "numpy", "rest", "plain", "none", "section-before-args"],
)
def test_docstring_styles(doc: str | None, summary: str, params: dict[str, str]) -> None:
    """Google, NumPy and reST docstrings give the same summary and parameter descriptions."""
    assert parse_docstring(doc) == (summary, params)


def test_annotated_field_description_wins_over_the_docstring() -> None:
    """An explicit ``Field(description=...)`` is kept when the docstring names the parameter too."""
    parameters = ToolSpec.from_function(CORPUS["schedule"]).parameters
    assert parameters["properties"]["title"]["description"] == "Short title."


def _varargs(*paths: str) -> str:
    return ""


def _kwargs(**flags: bool) -> str:
    return ""


@pytest.mark.parametrize(
    ("fn", "error"),
    [
        (lambda x: x, "must match"),
        (_varargs, "cannot be a tool parameter"),
        (_kwargs, "cannot be a tool parameter"),
    ],
    ids=["lambda-name", "varargs", "kwargs"],
)
def test_unusable_functions_are_refused(fn: Callable[..., Any], error: str) -> None:
    """A name the providers refuse, or ``*args``, is an error naming the problem."""
    with pytest.raises((ValueError, TypeError), match=error):
        ToolSpec.from_function(fn)


def test_a_name_can_be_given() -> None:
    """``from_function(fn, name=...)`` names a lambda."""
    spec = ToolSpec.from_function(lambda x: x, name="echo")  # type: ignore[misc]
    assert spec.name == "echo"
    assert spec.parameters["properties"] == {"x": {}}


def test_non_object_root_is_refused() -> None:
    """A schema whose root is not an object cannot be a tool's parameters."""
    with pytest.raises(ValueError, match="object schema"):
        portable_schema({"type": "string"})


def test_field_descriptions_of_models_are_kept() -> None:
    """A model's Field descriptions survive into the spec."""

    class Query(BaseModel):
        text: str = Field(description="What to look for.")

    assert ToolSpec.from_model(Query).parameters["properties"]["text"] == {
        "description": "What to look for.",
        "type": "string",
    }
