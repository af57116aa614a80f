"""The error tree is drawn once, completely: every exception class nisse_llm.errors defines
appears in the module's drawing, under its real parent, and the docs show the same drawing."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import nisse_llm
from nisse_llm import errors

DOCS = Path(__file__).resolve().parents[2] / "docs" / "guides" / "errors.md"
ROW = re.compile(r"^(?P<indent>(?:[│ ]   )*)(?:[├└]── )?(?P<name>[A-Z]\w+)(?: \((?P<base>\w+)\))?")


def drawing() -> str:
    doc = inspect.getdoc(errors) or ""
    block = doc.split("::\n\n", 1)[1].split("\n\nStatus,", 1)[0]
    return "\n".join(line.removeprefix("    ") for line in block.splitlines())


def drawn_parents() -> dict[str, str]:
    """Each drawn class -> the parent the drawing gives it (its indented parent's name, or
    the base written in parentheses for a root)."""
    parents: dict[str, str] = {}
    stack: list[str] = []
    for line in drawing().splitlines():
        row = ROW.match(line)
        if row is None or not hasattr(errors, row["name"]):
            continue
        depth = len(row["indent"]) // 4 + (1 if "──" in line else 0)
        del stack[depth:]
        parents[row["name"]] = row["base"] if depth == 0 else stack[depth - 1]
        stack.append(row["name"])
    return parents


def test_every_exception_class_of_the_module_is_drawn_under_its_parent() -> None:
    defined = {
        name: cls
        for name, cls in vars(errors).items()
        if isinstance(cls, type)
        and issubclass(cls, BaseException | Warning)
        and cls.__module__ == errors.__name__
    }
    parents = drawn_parents()
    assert set(parents) == set(defined)
    for name, parent in parents.items():
        assert defined[name].__bases__[0].__name__ == parent, name


def test_the_docs_draw_the_same_tree() -> None:
    text = DOCS.read_text(encoding="utf-8")
    block = text.split("```text\n", 1)[1].split("```", 1)[0]
    assert block.rstrip() == drawing().rstrip()


def test_the_public_errors_are_the_modules_own() -> None:
    for name in nisse_llm.__all__:
        value = getattr(nisse_llm, name)
        if isinstance(value, type) and issubclass(value, BaseException):
            assert value.__module__ == errors.__name__, name
