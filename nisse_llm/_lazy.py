"""Names a package exports but imports on first use (PEP 562 ``__getattr__``).

The package (``nisse_llm``), its configuration and its testing kit each keep what is
costly to import out of their own import: a name is looked up in its table, imported
from the module named there, and kept in the package's namespace, so the next lookup
is a plain attribute.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_getattr"]


def lazy_getattr(
    package: str, where: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """A ``__getattr__`` for ``package`` (whose globals are ``namespace``) that imports
    each name in ``where`` from the module it maps to, on first access."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
