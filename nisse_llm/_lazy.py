"""Names a package exports but imports on first use (PEP 562 ``__getattr__``).

The package (``nisse_llm``), its configuration and its testing kit each keep what is
costly to import out of their own import: a name is looked up in its table, imported
from the module named there, and kept in the package's namespace, so the next lookup
is a plain attribute. A name renamed (`renamed`) is still given, with a
`DeprecationWarning` at each use, for one release; so is each name of a module that moved
(`former_home`), the warning naming its new home.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["former_home", "lazy_getattr", "renamed"]


def lazy_getattr(
    package: str,
    where: Mapping[str, str],
    namespace: dict[str, Any],
    *,
    old_names: Mapping[str, str] | None = None,
) -> Callable[[str], Any]:
    """A ``__getattr__`` for ``package`` (whose globals are ``namespace``) that imports
    each name in ``where`` from the module it maps to, on first access; a name of
    ``old_names`` gives its new name's value, with a warning (never kept)."""

    def __getattr__(name: str) -> Any:
        if old_names is not None and name in old_names:
            new = old_names[name]
            return renamed(
                package, name, new, __getattr__(new) if new not in namespace else namespace[new]
            )
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__


def renamed(package: str, old: str, new: str, value: Any) -> Any:
    """``value``, the object once named ``old`` in ``package``, with a `DeprecationWarning`
    pointing at the caller's line and naming ``new``."""
    warnings.warn(
        f"{package}.{old} is renamed {new}; the old name goes in the next release",
        DeprecationWarning,
        stacklevel=3,
    )
    return value


def former_home(module: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A ``__getattr__`` for ``module``, a former home: each name of ``homes`` is imported
    from its new home there (``"package.module"``, or ``"package.module:new_name"`` for a
    name renamed as it moved; on every access, never kept), with a `DeprecationWarning`
    naming that home at the caller's line."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        place, _, new = home.partition(":")
        new = new or name
        warnings.warn(
            f"{module}.{name} moved to {place}.{new}; the old path goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(place), new)

    return __getattr__
