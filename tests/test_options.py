"""`RequestOptions`: the fields' validation, layering with ``over``, and its value semantics."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from nisse_llm import RequestOptions

FIELDS = (
    "max_output_tokens",
    "reasoning",
    "temperature",
    "top_p",
    "stop",
    "tool_choice",
    "parallel_tool_calls",
    "reasoning_display",
    "like",
)

layers = st.builds(
    RequestOptions,
    max_output_tokens=st.none() | st.integers(1, 10**6),
    reasoning=st.none() | st.sampled_from(["off", "low", "medium", "high"]) | st.integers(1, 10**5),
    temperature=st.none() | st.floats(0, 2),
    top_p=st.none() | st.floats(0, 1, exclude_min=True),
    stop=st.none() | st.lists(st.text(min_size=1, max_size=4), max_size=3).map(tuple),
    tool_choice=st.none() | st.sampled_from(["auto", "none", "required", "read_file"]),
    parallel_tool_calls=st.none() | st.booleans(),
)


def test_the_public_fields_are_the_contract() -> None:
    assert tuple(RequestOptions.model_fields) == FIELDS
    assert RequestOptions().is_empty
    assert not RequestOptions(top_p=0.5).is_empty


@pytest.mark.parametrize(
    "fields",
    [
        {"max_output_tokens": 0},
        {"max_output_tokens": -5},
        {"reasoning": "extreme"},
        {"reasoning": 0},
        {"reasoning": -1},
        {"temperature": -0.1},
        {"temperature": 2.01},
        {"temperature": float("nan")},
        {"top_p": 0},
        {"top_p": 1.5},
        {"top_p": float("inf")},
        {"stop": [""]},
        {"tool_choice": "two words"},
        {"tool_choice": "x" * 65},
        {"tool_choice": ""},
        {"surprise": 1},
    ],
)
def test_out_of_range_values_are_refused(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        RequestOptions.model_validate(fields)


def test_edge_values_are_accepted() -> None:
    options = RequestOptions(
        max_output_tokens=1, reasoning=1, temperature=0, top_p=1, stop=["x"], tool_choice="a-b_9"
    )
    assert options.stop == ("x",)
    assert RequestOptions(temperature=2).temperature == 2.0


def test_options_are_frozen_and_hashable() -> None:
    options = RequestOptions(stop=("a",), reasoning="low")
    with pytest.raises(ValidationError):
        options.reasoning = "high"  # type: ignore[misc]
    assert hash(options) == hash(RequestOptions(stop=["a"], reasoning="low"))


def test_over_takes_each_set_field_and_inherits_the_rest() -> None:
    base = RequestOptions(reasoning="high", max_output_tokens=32000, stop=("</plan>",))
    call = RequestOptions(max_output_tokens=4000, temperature=0.2)
    assert call.over(base) == RequestOptions(
        reasoning="high", max_output_tokens=4000, stop=("</plan>",), temperature=0.2
    )
    assert call.over(None) is call
    assert RequestOptions().over(base) is base


@given(layers, layers, layers)
def test_over_is_field_wise_precedence(
    top: RequestOptions, mid: RequestOptions, low: RequestOptions
) -> None:
    """Each field comes from the highest layer that sets it; layering is associative."""
    merged = top.over(mid.over(low))
    for name in FIELDS:
        expected = next(
            (getattr(layer, name) for layer in (top, mid, low) if getattr(layer, name) is not None),
            None,
        )
        assert getattr(merged, name) == expected
    assert merged == top.over(mid).over(low)


@given(layers)
def test_json_round_trip(options: RequestOptions) -> None:
    assert RequestOptions.model_validate_json(options.model_dump_json()) == options
