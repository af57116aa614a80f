"""Bounds on numbers and strings a server reports, shared by every route's response models.

A token count is a JSON integer from 0 to 10^12: a boolean, a string, a float or a
negative or absurd number is a malformed reply, never metered. A model name is kept to
its first 256 characters (a reply is not refused for a long name, but no server string
grows a log line or a terminal without bound).
"""

from __future__ import annotations

from typing import Annotated, Any, TypeAlias

from pydantic import BeforeValidator, GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema

__all__ = ["MAX_TOKEN_COUNT", "ServerName", "TokenCount"]

#: Largest token count accepted: no reply uses a trillion tokens.
MAX_TOKEN_COUNT = 10**12
_NAME_LIMIT = 256


def _clip(value: Any) -> Any:
    return value[:_NAME_LIMIT] if isinstance(value, str) else value


class _TokenCountSchema:
    """A token count's schema, given whole: the same checks as ``Field(strict=True, ge=0,
    le=MAX_TOKEN_COUNT)``, at half the cost of building a reply model (a reply model has a
    dozen such fields, and every program's first reply builds one)."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        return core_schema.int_schema(strict=True, ge=0, le=MAX_TOKEN_COUNT)


TokenCount: TypeAlias = Annotated[int, _TokenCountSchema()]
ServerName: TypeAlias = Annotated[str, BeforeValidator(_clip)]
