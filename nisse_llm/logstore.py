"""The task file's former home, kept for imports written against it: it lives in
`nisse_llm.task.logstore`, which says what this module exports."""

from nisse_llm.task.logstore import *  # noqa: F403
from nisse_llm.task.logstore import __all__ as __all__
from nisse_llm.task.logstore import __getattr__ as __getattr__
