"""``nisse-llm config init``: a commented starter TOML with its JSON Schema beside it.

The TOML's first line, ``#:schema ./nisse-llm.config.schema.json``, is relative to the
TOML itself, so editors and TOML-aware validators (taplo, Even Better TOML) find the schema
wherever the pair is put. The schema is rendered from the installed package's models, so
an SDK installed without the repository writes the same file as ``schemas/`` holds.
"""

from __future__ import annotations

import os
from pathlib import Path

from nisse_llm.cli.schema import CONFIG_SCHEMA_FILE, render_schemas
from nisse_llm.config.settings import DEFAULT_CONFIG_NAME
from nisse_llm.errors import ConfigError

__all__ = ["DEFAULT_CONFIG_NAME", "init_config", "starter_toml"]

_STARTER = """\
#:schema ./{schema}
# nisse-llm configuration (written by `nisse-llm config init`).
#
# Every key may instead come from its environment variable (named beside it); the
# environment wins over this file. Check it with `nisse-llm config check` (it reads
# ./nisse.toml; else pass --config PATH; add --online to ask the proxy whether each role
# will work). An unknown key or table
# is an error, so a typo cannot pass silently.

# The roles this file must define (env NISSE_REQUIRE_ROLES, comma-separated; default: the
# four seed roles under [roles]). An agent that uses fewer names them here, above [llm]:
# require_roles = ["executor", "planner"]

[llm]
# The LiteLLM proxy, without /v1 (the SDK appends each route's path).
# Env NISSE_LLM_BASE_URL. Required.
base_url = "http://127.0.0.1:4000"

# The proxy token: prefer the environment variable NISSE_LLM_TOKEN. If you write it
# here, keep this file readable by its owner only (it is created with mode 600).
# token = "sk-..."

# Output ceiling per request, in tokens (env NISSE_MAX_OUTPUT_TOKENS).
max_output_tokens = 16384

[roles]
# The model each role resolves to, as the proxy names it. The four seed roles are
# required unless the agent names the ones it uses (load_settings(require_roles=...));
# add roles of your own the same way (reviewer = "..."; env NISSE_ROLE_REVIEWER). The
# mapping is pinned when a task starts, so edits reach only tasks started later.
executor = "claude-sonnet-5-5"  # env NISSE_ROLE_EXECUTOR
planner = "claude-opus-5-5"     # env NISSE_ROLE_PLANNER
delegate = "claude-haiku-5-5"   # env NISSE_ROLE_DELEGATE
consultant = "gpt-6-astra"      # env NISSE_ROLE_CONSULTANT

# A role may instead be a table: its model plus the request options its calls carry by
# default (a call's own options override them). Replace its line above with, e.g.:
#
# [roles.planner]
# model = "claude-opus-5-5"
# reasoning = "high"          # off | minimal | low | medium | high | xhigh | max,
#                             #   as the model offers them (nisse_llm.config.model_rules)
# max_output_tokens = 32000
"""


def starter_toml() -> str:
    """The starter file's text: every required key but the token, with comments."""
    return _STARTER.format(schema=CONFIG_SCHEMA_FILE)


def init_config(path: str | Path = DEFAULT_CONFIG_NAME, *, force: bool = False) -> list[Path]:
    """Write the starter TOML at ``path`` and the config schema beside it; the paths written.

    An existing TOML is never overwritten unless ``force``: the operator's file is theirs.
    The schema beside it is always brought up to date. The TOML is created with mode 600.
    """
    target = Path(path)
    if target.is_dir():
        target = target / DEFAULT_CONFIG_NAME
    if target.exists() and not force:
        raise ConfigError(
            f"{target} exists; not overwriting it (pass --force to replace it, or name "
            "another path)"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    schema_path = target.parent / CONFIG_SCHEMA_FILE
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    fd = os.open(target, flags, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(starter_toml())
    os.chmod(target, 0o600)  # an existing file forced over keeps no wider mode
    schema_path.write_text(render_schemas()[CONFIG_SCHEMA_FILE], encoding="utf-8")
    return [target, schema_path]
