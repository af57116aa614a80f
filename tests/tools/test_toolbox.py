"""Toolbox dispatch: validated arguments, model-facing errors, raising, async and unknown tools."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import date

import pytest
from pydantic import BaseModel

from nisse_llm import AssistantText, Toolbox, ToolCall, ToolResult, ToolSpec, UserText
from nisse_llm.events.images import Image
from nisse_llm.events.tool_text import result_text
from nisse_llm.testing.images import png
from tests.tools.signatures import Point, Shape, draw, fetch, grep, positional, tricky_names


def add(a: int, b: int = 1) -> int:
    """Add two numbers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}")


async def slow_echo(text: str, times: int = 1) -> str:
    """Echo, asynchronously."""
    await asyncio.sleep(0)
    return text * times


def _call(tool: str, call_id: str = "call_1", **arguments: object) -> ToolCall:
    return ToolCall(call_id=call_id, tool=tool, arguments=arguments)


BOX = Toolbox([add, explode, slow_echo, draw, grep, positional, tricky_names])


def test_specs_come_from_the_functions_in_order() -> None:
    """``specs`` are `ToolSpec.from_function` of each tool, in the order given."""
    strict = ToolSpec.from_function(explode).model_copy(update={"strict": True})
    assert BOX.specs[:2] == [ToolSpec.from_function(add), strict]  # add's b is optional
    assert [spec.name for spec in BOX.specs][2] == "slow_echo"


def test_good_arguments_run_the_tool() -> None:
    """Valid arguments are validated into the declared types and the result is text."""
    [result] = BOX.run([_call("add", a=2, b="3")])
    assert result == ToolResult(call_id="call_1", output="5")


def test_defaults_apply_and_nested_models_arrive_as_models() -> None:
    """A missing optional argument takes its default; a nested object arrives as its model."""
    results = BOX.run(
        [
            _call("add", "call_a", a=2),
            _call("draw", "call_b", shape={"name": "tri", "points": [{"x": 1}]}),
        ]
    )
    assert [r.output for r in results] == ["3", "tri"]


def test_bad_arguments_tell_the_model_what_to_fix() -> None:
    """Arguments that do not validate become an error result listing each problem."""
    [result] = BOX.run([_call("add", a="two", c=1)])
    assert result.is_error
    assert result.output == (
        "Invalid arguments for tool 'add':\n"
        "- a: Input should be a valid integer, unable to parse string as an integer (got 'two')\n"
        "- c: Extra inputs are not permitted\n"
        "Call 'add' again with arguments that match its schema."
    )


def test_missing_and_nested_errors_name_their_path() -> None:
    """A missing argument and an error deep in a nested model each name their location."""
    [result] = BOX.run([_call("draw", shape={"points": [{"x": "?"}]})])
    assert result.is_error
    lines = result.output.splitlines()
    assert "- shape.name: Field required" in lines
    assert any(
        line.startswith("- shape.points.0.x: Input should be a valid integer") for line in lines
    )


def test_a_raising_tool_becomes_an_error_result() -> None:
    """An exception inside a tool is an error result with its type and message."""
    [result] = BOX.run([_call("explode", reason="disk")])
    assert result == ToolResult(
        call_id="call_1", output="Tool 'explode' failed: RuntimeError: boom: disk", is_error=True
    )


def test_propagate_errors_lets_the_exception_through() -> None:
    """With ``propagate_errors=True`` the tool's own exception reaches the caller."""
    box = Toolbox([explode], propagate_errors=True)
    with pytest.raises(RuntimeError, match="boom: x"):
        box.run([_call("explode", reason="x")])


def test_propagate_errors_still_answers_bad_arguments() -> None:
    """Propagation is for tool failures only: bad arguments stay a result for the model."""
    box = Toolbox([explode], propagate_errors=True)
    [result] = box.run([_call("explode")])
    assert result.is_error
    assert "- reason: Field required" in result.output


def test_unknown_tool_names_list_the_known_ones() -> None:
    """A call to a tool the box lacks is an error result naming the tools it has."""
    box = Toolbox([add, explode])
    [result] = box.run([_call("delete_everything")])
    assert result == ToolResult(
        call_id="call_1",
        output="Unknown tool 'delete_everything'. Available tools: 'add', 'explode'.",
        is_error=True,
    )


def test_async_tools_run_from_sync_code() -> None:
    """`run` runs an async tool to completion in its own event loop."""
    [result] = BOX.run([_call("slow_echo", text="ab", times=2)])
    assert result.output == "abab"


async def test_arun_awaits_async_tools_and_threads_sync_ones() -> None:
    """`arun` awaits async tools, runs sync ones off the loop, and keeps the calls' order."""
    results = await BOX.arun(
        [
            _call("slow_echo", "call_a", text="x"),
            _call("add", "call_b", a=1, b=1),
            _call("explode", "call_c", reason="r"),
            _call("nope", "call_d"),
        ]
    )
    assert [(r.call_id, r.output, r.is_error) for r in results] == [
        ("call_a", "x", False),
        ("call_b", "2", False),
        ("call_c", "Tool 'explode' failed: RuntimeError: boom: r", True),
        ("call_d", results[3].output, True),
    ]
    assert (await Toolbox([fetch]).arun([_call("fetch", url="u")]))[0].output == "u"


async def test_run_inside_a_running_loop_refuses_async_tools() -> None:
    """Sync `run` inside an event loop cannot run an async tool: it says to use `arun`."""
    with pytest.raises(RuntimeError, match="arun"):
        BOX.run([_call("slow_echo", text="x")])


def test_only_tool_calls_are_run() -> None:
    """Other events in the list (a whole reply) are skipped; one result per call."""
    reply = [AssistantText(text="Adding.", model="m"), _call("add", a=1), UserText(text="hi")]
    assert [r.output for r in BOX.run(reply)] == ["2"]


def test_positional_only_and_shadowing_names_are_passed_right() -> None:
    """Positional-only parameters and names like ``json`` reach the function as declared."""
    results = BOX.run(
        [
            _call("positional", "call_a", path="a.txt", mode="w"),
            _call("tricky_names", "call_b", json="j", model_config=2, schema=True),
        ]
    )
    assert [r.output for r in results] == ["a.txt:w", "j"]


def test_duplicate_names_are_refused() -> None:
    """Two tools with one name would make dispatch ambiguous."""
    with pytest.raises(ValueError, match="two tools are named 'add'"):
        Toolbox([add, add])


@dataclasses.dataclass
class _Report:
    when: date
    tags: frozenset[str]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("plain", "plain"),
        (b"caf\xc3\xa9 \xff", "café \ufffd"),
        (None, "null"),
        (3.5, "3.5"),
        ({"b": [1, 2], "a": None}, '{"b":[1,2],"a":null}'),
        (Point(x=1), '{"x":1,"y":0}'),
        (_Report(date(2026, 1, 2), frozenset({"x"})), '{"when":"2026-01-02","tags":["x"]}'),
        (Shape(name="s", points=[]), '{"name":"s","points":[],"color":"red"}'),
    ],
    ids=["str", "bytes", "none", "float", "dict", "model", "dataclass", "enum-model"],
)
def test_results_become_text_deterministically(value: object, text: str) -> None:
    """Return values become the same text every time: str as is, else compact JSON."""
    assert result_text(value) == text
    assert result_text(value) == result_text(value)


def test_unserialisable_values_fall_back_to_repr() -> None:
    """A value JSON cannot hold is written as its repr, never an exception."""

    class Opaque:
        def __repr__(self) -> str:
            return "<opaque>"

    assert result_text(Opaque()) == '"<opaque>"'


def test_a_tool_returning_a_model_is_serialised() -> None:
    """A tool may return a pydantic model; the model sees its JSON."""

    class Answer(BaseModel):
        ok: bool

    def check() -> Answer:
        """Check."""
        return Answer(ok=True)

    assert Toolbox([check]).run([_call("check")])[0].output == '{"ok":true}'


def test_grep_with_defaults() -> None:
    """A list argument validates and defaults fill the rest (the corpus' grep)."""
    assert BOX.run([_call("grep", pattern="x", paths=["a"])])[0].output == "x"


def test_bound_methods_are_tools() -> None:
    """A bound method is a tool without its ``self``: the agent's objects can hold state."""

    class Notes:
        def __init__(self) -> None:
            self.lines: list[str] = []

        def note(self, text: str) -> int:
            """Keep a note.

            Args:
                text: What to keep.
            """
            self.lines.append(text)
            return len(self.lines)

    notes = Notes()
    box = Toolbox([notes.note])
    assert box.specs[0].parameters["properties"] == {
        "text": {"description": "What to keep.", "type": "string"}
    }
    assert box.run([_call("note", text="hi")])[0].output == "1"
    assert notes.lines == ["hi"]


def test_a_tool_returning_images_fills_the_result_images() -> None:
    """An `Image`, or strings and images together, become the result's images and text."""
    shot = Image.from_bytes(png(4, 3))

    def screenshot(note: str = "") -> Image | list[str | Image]:
        """Take a screenshot."""
        return [note, shot] if note else shot

    box = Toolbox([screenshot])
    alone, with_text = box.run(
        [_call("screenshot", "call_a"), _call("screenshot", "call_b", note="the page")]
    )
    assert alone == ToolResult(call_id="call_a", output="", images=(shot,))
    assert with_text == ToolResult(call_id="call_b", output="the page", images=(shot,))


def test_a_list_without_images_stays_json() -> None:
    """A list of plain values is JSON text, not an image result."""
    assert Toolbox([grep]).run([_call("grep", pattern="x", paths=["a"])])[0].images == ()
    assert result_text(["a", 1]) == '["a",1]'


def test_a_tool_is_repeatable_only_when_its_box_names_it() -> None:
    """`is_repeatable` is False by default and True for a name given in ``repeatable``; a
    spec built with ``repeatable=True`` says so itself and tells no box anything."""

    def read(path: str) -> str:
        """Read a file."""
        return path

    spec = ToolSpec.from_function(read, repeatable=True)
    box = Toolbox([add, explode, read], repeatable={"add"})

    assert spec.repeatable is True
    assert (box.is_repeatable("add"), box.is_repeatable("explode")) == (True, False)
    assert box.is_repeatable("read") is False
    assert box.repeatable == frozenset({"add"})
    assert Toolbox([add]).is_repeatable("add") is False


def test_building_a_spec_leaves_the_function_as_it_was() -> None:
    """``ToolSpec.from_function(fn, repeatable=True)`` sets nothing on ``fn`` (nor on the
    function behind a bound method), so another box of the same function is unaffected."""

    def read(path: str) -> str:
        """Read a file."""
        return path

    class Files:
        def read(self, path: str) -> str:
            """Read a file."""
            return path

    files = Files()
    before = (dict(vars(read)), dict(vars(Files.read)))

    ToolSpec.from_function(read, repeatable=True)
    ToolSpec.from_function(files.read, repeatable=True)

    assert (vars(read), vars(Files.read)) == before
    assert Toolbox([read]).is_repeatable("read") is False
    assert Toolbox([files.read]).is_repeatable("read") is False
    assert ToolSpec.from_function(read).repeatable is False


def test_repeatable_never_reaches_the_wire() -> None:
    """A repeatable spec dumps, and so renders, exactly as the same spec unmarked."""

    def run_tests(path: str) -> str:
        """Run the tests."""
        return path

    marked = ToolSpec.from_function(run_tests, repeatable=True)
    unmarked = ToolSpec.from_function(run_tests, repeatable=False)

    assert (marked.repeatable, unmarked.repeatable) == (True, False)
    assert marked.model_dump() == unmarked.model_dump()
    assert "repeatable" not in marked.model_dump_json()


def test_repeatable_names_are_checked() -> None:
    """A name the box does not hold, or one string in place of a set, is refused."""
    with pytest.raises(ValueError, match="repeatable names no tool of the box: nope"):
        Toolbox([add], repeatable={"nope"})
    with pytest.raises(TypeError, match="repeatable holds tool names"):
        Toolbox([add], repeatable="add")
