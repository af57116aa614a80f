"""The settings a subcommand runs with: ``--config`` loaded, its warnings printed plainly."""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence

from nisse_llm.config.settings import DEFAULT_CONFIG_NAME, Settings, load_settings

__all__ = ["add_config_argument", "load_for"]


def load_for(args: argparse.Namespace, *, require_roles: Sequence[str] | None = None) -> Settings:
    """Settings for ``--config``, with warnings (a readable token file, a name probably
    misspelt) printed plainly; the roles required are ``require_roles``, else
    ``--require``, else the configuration's ``require_roles`` (environment over file),
    else the seeds'."""
    if require_roles is None:
        require_roles = getattr(args, "require", None) or None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        settings = load_settings(args.config, require_roles=require_roles)
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)
    return settings


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    """The ``--config PATH`` that `load_for` reads."""
    parser.add_argument(
        "--config",
        metavar="PATH",
        help=f"TOML file (default: $NISSE_CONFIG, else ./{DEFAULT_CONFIG_NAME} if present)",
    )
