"""Names that are probably misspelt: a role a small edit from another, a model no rules
row covers a small edit from one a row does (pure: names in, findings out).

"A small edit" is one rule for both: the names split into the same words (at ``-``, ``.``
and ``_``) and differ in one word, by at most two letters inserted, deleted or replaced
and with `difflib`'s ratio of at least 0.75 between the two spellings (the ratio of the
missing role's hint, "is it roles.planner misspelled?"), or only in where the separators
are. A word holding a digit never counts as misspelt:
``worker1`` beside ``worker2``, ``claude-opus-4-1`` beside ``claude-opus-4-5`` and
``gpt-a`` beside ``gpt-5`` are different names on purpose.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from nisse_llm.config.model_rules import MODEL_RULES, placed_rules
from nisse_llm.config.routing import Route, route_for

__all__ = ["close_name", "model_typo", "role_typos"]

_CUTOFF = 0.75
_MAX_EDITS = 2
_SEPARATORS = re.compile(r"[-._]")
_ROW_NAMES = tuple(name for row in MODEL_RULES for name in row.names)


def close_name(name: str, known: Iterable[str]) -> str | None:
    """The name in ``known`` that ``name`` is probably a misspelling of, or ``None``."""
    best, best_ratio = None, 0.0
    for other in known:
        ratio = _closeness(name, other)
        if ratio > best_ratio:
            best, best_ratio = other, ratio
    return best


def _closeness(name: str, other: str) -> float:
    """How alike two names are when they differ by a small edit (else 0)."""
    if name == other:
        return 0.0
    words, others = _SEPARATORS.split(name), _SEPARATORS.split(other)
    if words == others or "".join(words) == "".join(others):
        return 1.0  # only the separators differ
    if len(words) != len(others):
        return 0.0
    differ = [(a, b) for a, b in zip(words, others, strict=True) if a != b]
    if len(differ) != 1 or any(char.isdigit() for char in "".join(differ[0])):
        return 0.0
    ratio = difflib.SequenceMatcher(None, *differ[0]).ratio()
    return ratio if ratio >= _CUTOFF and _edits(*differ[0]) <= _MAX_EDITS else 0.0


def _edits(a: str, b: str) -> int:
    """Letters inserted, deleted or replaced to turn ``a`` into ``b`` (Levenshtein)."""
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        current = [i]
        for j, other in enumerate(b, 1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char != other))
            )
        previous = current
    return previous[-1]


def role_typos(roles: Iterable[str], required: Iterable[str]) -> list[tuple[str, str]]:
    """``(extra, other)`` for each role outside ``required`` that is a small edit from
    another role in ``roles``, each pair once (two required roles were both asked for)."""
    given = sorted(roles)
    wanted = set(required)
    found: list[tuple[str, str]] = []
    seen: set[frozenset[str]] = set()
    for name in given:
        if name in wanted:
            continue
        other = close_name(name, given)
        if other is not None and frozenset((name, other)) not in seen:
            seen.add(frozenset((name, other)))
            found.append((name, other))
    return found


def model_typo(model: str, prefixes: Iterable[str]) -> tuple[str, Route] | None:
    """The model ``model`` probably misspells, with the route it would take, when no rules
    row covers ``model`` and one covers a name a small edit from it; else ``None``."""
    if placed_rules(model) is not None:
        return None
    base = model.rsplit("/", 1)[-1]
    close = close_name(base.lower(), _ROW_NAMES)
    if close is None:
        return None
    meant = model[: len(model) - len(base)] + close
    return meant, route_for(meant, prefixes)
