"""The tools planner: what a step records, and what changed since the last record."""

from __future__ import annotations

from nisse_llm import ToolChanges, ToolSpec
from nisse_llm.agent.offer import offer
from nisse_llm.task.records import ToolsRecord

READ = ToolSpec(name="read_file", description="Read a file.")
WRITE = ToolSpec(name="write_file", description="Write a file.")


def test_the_first_tools_are_recorded_and_no_tools_are_not() -> None:
    """A task that recorded none records the first tools it offers, and nothing for none."""
    assert offer(None, [READ]).record == ToolsRecord(specs=[READ])
    assert offer(None, [READ]).changes == ToolChanges()
    assert offer(None, []).record is None


def test_equal_specs_in_any_order_record_nothing() -> None:
    """Specs equal to the recorded ones (read back from a file, reordered) are no change."""
    recorded = [ToolSpec.model_validate(s.model_dump()) for s in (READ, WRITE)]
    planned = offer(recorded, [WRITE, READ])
    assert planned.record is None
    assert not planned.changes


def test_other_specs_are_recorded_with_what_changed() -> None:
    """A removed tool and one described otherwise: recorded, and named."""
    planned = offer([READ, WRITE], [READ.model_copy(update={"description": "Read."})])
    assert planned.record == ToolsRecord(specs=[READ.model_copy(update={"description": "Read."})])
    assert planned.changes == ToolChanges(removed=("write_file",), changed=("read_file",))


def test_dropping_every_tool_is_recorded() -> None:
    """A step offering no tools after some is a change like any other."""
    planned = offer([READ], [])
    assert planned.record == ToolsRecord(specs=[])
    assert planned.changes.removed == ("read_file",)
