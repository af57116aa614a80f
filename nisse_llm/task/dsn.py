"""A database URL's secret: its password, kept out of every display and message.

Pure (no I/O). The password may sit in the authority (``postgresql://user:PW@host/db``,
percent-encoded) or in a ``password=`` parameter; both are hidden.
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote, urlsplit

from pydantic import SecretStr

__all__ = ["password_of", "redacted_url", "scrubbed"]

_PARAM = re.compile(r"(?i)(^|&)password=([^&]*)")


def password_of(url: str | SecretStr) -> str | None:
    """The URL's password as written (None if it has none)."""
    text = url.get_secret_value() if isinstance(url, SecretStr) else url
    parts = urlsplit(text)
    userinfo, at, _ = parts.netloc.rpartition("@")
    if at and ":" in userinfo:
        return userinfo.split(":", 1)[1] or None
    found = _PARAM.search(parts.query)
    return found.group(2) or None if found else None


def redacted_url(url: str | SecretStr) -> str:
    """The URL with its password shown as ``(set)``; a URL without one unchanged."""
    text = url.get_secret_value() if isinstance(url, SecretStr) else url
    parts = urlsplit(text)
    userinfo, at, host = parts.netloc.rpartition("@")
    netloc = parts.netloc
    if at and ":" in userinfo:
        netloc = f"{userinfo.split(':', 1)[0]}:(set)@{host}"
    query = _PARAM.sub(r"\1password=(set)", parts.query)
    return parts._replace(netloc=netloc, query=query).geturl()


def scrubbed(message: str, url: str | SecretStr) -> str:
    """``message`` with the URL's password, in every spelling it may take, as ``***``."""
    written = password_of(url)
    if not written:
        return message
    for form in {written, unquote(written), quote(unquote(written), safe="")}:
        message = message.replace(form, "***")
    return message
