"""Configuration: typed settings, role profiles, request options and each model's rules.

The settings (``Settings``, ``load_settings``, ``Pin``...) live in
`nisse_llm.config.settings` and are re-exported here on first use: the rule modules
beside them (routing, options, model rules) are read on every call, while the settings
and pydantic-settings load only when a program loads its configuration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nisse_llm import _lazy

if TYPE_CHECKING:
    from nisse_llm.config.settings import (
        CONFIG_ENV,
        DEFAULT_CONFIG_NAME,
        ENV_VARS,
        RECORD_FORMAT,
        ROLE_NAME_PATTERN,
        SEED_ROLES,
        ConfigTypoWarning,
        InsecureConfigFileWarning,
        LLMSettings,
        Pin,
        RoleMap,
        Settings,
        env_var,
        load_settings,
        load_task_store,
        role_name_problem,
    )

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_CONFIG_NAME",
    "ENV_VARS",
    "RECORD_FORMAT",
    "ROLE_NAME_PATTERN",
    "SEED_ROLES",
    "ConfigTypoWarning",
    "InsecureConfigFileWarning",
    "LLMSettings",
    "Pin",
    "RoleMap",
    "Settings",
    "env_var",
    "load_settings",
    "load_task_store",
    "role_name_problem",
]


__getattr__ = _lazy.lazy_getattr(
    __name__, dict.fromkeys(__all__, "nisse_llm.config.settings"), globals()
)
