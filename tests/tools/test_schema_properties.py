"""Schema fidelity over generated pydantic models: portable for both routes, strict per provider.

Each example is a random pydantic model (scalars with bounds and formats, enums, literals,
lists, optionals, nested models, mappings). Its tool spec must pass both routes' official
judges; its strict form for each provider must use only that provider's documented strict
subset (OpenAI's Structured Outputs "supported schemas"; Anthropic's structured outputs
"JSON Schema limitations"), with every object closed and every property required, or be
refused with a `ValueError` when strict mode cannot say it (an open mapping).
"""

from __future__ import annotations

import enum
import itertools
from datetime import date, datetime
from typing import Annotated, Any, Literal, Optional

import jsonschema  # type: ignore[import-untyped]  # no stubs in the dev extras
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, create_model

from nisse_llm import ToolSpec
from nisse_llm.events.tools import (
    ANTHROPIC_STRICT_KEYWORDS,
    OPENAI_STRICT_KEYWORDS,
    Dialect,
    strict_schema,
)
from tests.tools.judges import judge_spec

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_SERIAL = itertools.count()


class Level(enum.Enum):
    LOW = "low"
    HIGH = "high"


_LEAVES: list[Any] = [
    int,
    float,
    str,
    bool,
    date,
    datetime,
    Level,
    Literal["a", "b"],
    Literal[1, 2, 3],
    Annotated[int, Field(ge=0, le=100)],
    Annotated[float, Field(gt=0, multiple_of=0.5)],
    Annotated[str, Field(min_length=1, max_length=20)],
    Annotated[str, Field(pattern=r"^[a-z]+$")],
    Annotated[list[int], Field(min_length=2, max_length=5)],
    Annotated[set[str], Field()],
]


def _model(fields: dict[str, Any]) -> type[BaseModel]:
    model: type[BaseModel] = create_model(f"M{next(_SERIAL)}", **fields)
    return model


@st.composite
def _fields(draw: st.DrawFn, types: st.SearchStrategy[Any]) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from("abcdefgh"), min_size=1, max_size=4, unique=True))
    fields: dict[str, Any] = {}
    for name in names:
        kind = draw(types)
        optional = draw(st.booleans())
        described = draw(st.booleans())
        extra = {"description": f"The {name}."} if described else {}
        if optional:
            fields[name] = (Optional[kind], Field(None, **extra))  # noqa: UP045  # a runtime union
        else:
            fields[name] = (kind, Field(**extra))
    return fields


def _types() -> st.SearchStrategy[Any]:
    return st.recursive(
        st.sampled_from(_LEAVES),
        lambda inner: st.one_of(
            inner.map(lambda t: list[t]),  # type: ignore[valid-type]
            st.tuples(inner, inner).map(lambda pair: pair[0] | pair[1]),
            _fields(inner).map(_model),
            inner.map(lambda t: dict[str, t]),  # type: ignore[valid-type]
        ),
        max_leaves=6,
    )


models = _fields(_types()).map(_model)


def _schemas(node: Any) -> Any:
    """Every subschema (not the ``properties`` maps themselves, nor data like enums)."""
    if not isinstance(node, dict):
        return
    yield node
    for key, value in node.items():
        if key in ("properties", "$defs"):
            for sub in value.values():
                yield from _schemas(sub)
        elif key in ("items", "additionalProperties"):
            yield from _schemas(value)
        elif key in ("anyOf", "oneOf", "allOf"):
            for sub in value:
                yield from _schemas(sub)


def _is_open(schema: dict[str, Any]) -> bool:
    return any(
        isinstance(node.get("additionalProperties"), dict)
        or (node.get("type") == "object" and "properties" not in node)
        for node in _schemas(schema)
    )


@SETTINGS
@given(models)
def test_generated_specs_pass_the_official_judges(model: type[BaseModel]) -> None:
    """Any generated model's tool spec is valid JSON Schema and a valid tool on both routes."""
    judge_spec(ToolSpec.from_model(model, name="answer"))


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
@SETTINGS
@given(model=models)
def test_strict_schema_keeps_to_the_provider_subset(
    dialect: Dialect, model: type[BaseModel]
) -> None:
    """The strict form uses only the provider's keywords and formats, objects closed and
    fully required, or is refused when the model holds an open mapping."""
    portable = ToolSpec.from_model(model, name="answer").parameters
    if _is_open(portable):
        with pytest.raises(ValueError, match="fixed properties"):
            strict_schema(portable, dialect)
        return
    strict = strict_schema(portable, dialect)
    jsonschema.Draft202012Validator.check_schema(strict)
    allowed = OPENAI_STRICT_KEYWORDS if dialect == "openai" else ANTHROPIC_STRICT_KEYWORDS
    for node in _schemas(strict):
        assert set(node) <= allowed - {"default", "const"}, node
        if "properties" in node:
            assert node["additionalProperties"] is False
            assert node["required"] == list(node["properties"])
        if dialect == "anthropic":
            assert node.get("minItems", 0) <= 1
        if "format" in node:
            assert node["format"] in {"date", "date-time", "email", "uuid", "uri", "time"}
    assert strict["type"] == "object"


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_strict_schema_states_what_it_drops(dialect: Dialect) -> None:
    """A bound the provider cannot enforce moves into the description, in words."""

    class Bounded(BaseModel):
        size: Annotated[int, Field(ge=1, le=9, description="How big.")]
        name: Annotated[str, Field(max_length=8)]

    strict = strict_schema(ToolSpec.from_model(Bounded).parameters, dialect)
    size, name = strict["properties"]["size"], strict["properties"]["name"]
    if dialect == "openai":
        assert (size["minimum"], size["maximum"]) == (1, 9)
        assert size["description"] == "How big."
    else:
        assert "minimum" not in size
        assert size["description"] == "How big. (Must be at least 1. Must be at most 9.)"
    assert "maxLength" not in name
    assert name["description"] == "Must be at most 8 characters long."


def test_optional_fields_become_required_and_nullable() -> None:
    """Strict mode lists every property as required; a defaulted one accepts null instead."""

    class Query(BaseModel):
        text: str
        limit: int = 10

    strict = strict_schema(ToolSpec.from_model(Query).parameters, "openai")
    assert strict["required"] == ["text", "limit"]
    assert strict["properties"]["limit"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}


def test_anthropic_strict_refuses_recursion() -> None:
    """Anthropic's strict mode takes no recursive schema; OpenAI's keeps the reference."""
    from tests.tools.signatures import Tree

    portable = ToolSpec.from_model(Tree).parameters
    assert "$defs" in strict_schema(portable, "openai")
    with pytest.raises(ValueError, match="recursive"):
        strict_schema(portable, "anthropic")
