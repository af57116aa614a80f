"""A resumed task's tools against the ones it recorded: the same, or what changed."""

from __future__ import annotations

from nisse_llm import ToolSpec
from nisse_llm.events.tool_changes import ToolChanges, tool_changes

STATUS = ToolSpec(name="git_status", description="Shows the working tree status")
LOG = ToolSpec(name="git_log", description="Shows the commit logs")
DIFF = ToolSpec(name="git_diff", description="Shows differences")


def test_the_same_tools_are_no_change() -> None:
    """Specs equal to the recorded ones, in any order, are no change (a false value)."""
    changes = tool_changes([STATUS, LOG], [LOG, STATUS])
    assert not changes
    assert changes == ToolChanges()
    assert str(changes) == "the same tools"


def test_added_removed_and_changed_tools_are_named() -> None:
    """A new tool, a vanished one and one whose schema moved are each named."""
    widened = LOG.model_copy(
        update={"parameters": {"type": "object", "properties": {"max_count": {"type": "integer"}}}}
    )
    changes = tool_changes([STATUS, LOG], [widened, DIFF])
    assert changes == ToolChanges(
        added=("git_diff",), removed=("git_status",), changed=("git_log",)
    )
    assert str(changes) == (
        "tools changed since the task last offered them: added git_diff; removed git_status; "
        "changed git_log"
    )


def test_recorded_specs_may_be_their_json() -> None:
    """What a task file holds (the specs as JSON) compares like the specs themselves."""
    recorded = [STATUS.model_dump(mode="json"), LOG.model_dump(mode="json")]
    assert not tool_changes(recorded, [STATUS, LOG])
    assert tool_changes(recorded, [STATUS]).removed == ("git_log",)


def test_whether_a_tool_may_run_again_is_no_change() -> None:
    """``repeatable`` is the loop's business, never sent to the model nor recorded: a spec
    differing only there is the same tool."""
    assert not tool_changes(
        [STATUS.model_dump(mode="json")], [STATUS.model_copy(update={"repeatable": True})]
    )
