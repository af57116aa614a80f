"""Where the token may go: URL and token checks, environment proxies, redacted httpx logs.

Pure checks (no httpx, no I/O beyond reading the proxy variables) shared by the settings
and the clients:

- `check_base_url`: a base URL must parse and must not carry ``user:password@`` (httpx
  would turn it into Basic auth replacing the Bearer token, and the password would show
  in reprs, the pin record and httpx's own request log);
- `check_token`: a token must be printable ASCII without spaces (a CR/LF would split
  the header); the error never contains it;
- `environment_proxy`: the ``HTTP(S)_PROXY`` / ``ALL_PROXY`` a request to the base URL
  takes, as httpx would choose it, except that a loopback base URL never takes one;
- `watch_token`: registers a live token so the records of the ``httpx`` and ``httpcore``
  loggers (DEBUG traces quote status lines and headers a server may echo it in) have it
  replaced by ``[redacted]`` before any handler sees them.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import threading
import urllib.request
from collections.abc import Callable
from typing import Final
from urllib.parse import SplitResult, urlsplit

from nisse_llm.errors import ConfigError

__all__ = ["check_base_url", "check_token", "environment_proxy", "is_loopback", "watch_token"]

# NO_PROXY matching as urllib does it (public in urllib.request, absent from its stubs).
_BYPASS: Callable[[str, dict[str, str]], bool] = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]
_TOKEN: Final = re.compile(r"[\x21-\x7e]+")
_REDACTED: Final = "[redacted]"
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# Every logger httpx and httpcore write to (a logger's filters see only its own records).
_HTTP_LOGGERS: Final = (
    "httpx",
    "httpcore",
    "httpcore.connection",
    "httpcore.connection_pool",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "httpcore.socks",
)


def _split(url: str) -> SplitResult:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError for a port that is not a number
    except ValueError as exc:
        raise ConfigError(f"base URL {_shown(url)} cannot be parsed: {exc}") from None
    return parts


def check_base_url(url: str) -> str:
    """``url`` if it is an http(s) URL with a host, no userinfo, that parses; else `ConfigError`."""
    if _CONTROL.search(url):
        raise ConfigError(f"base URL {_shown(url)} holds control characters")
    parts = _split(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"base URL {_shown(url)} must be http:// or https:// with a host")
    if "@" in parts.netloc:
        shown = parts._replace(netloc="[userinfo]@" + parts.netloc.rpartition("@")[2]).geturl()
        raise ConfigError(
            f"base URL {shown} carries user:password@ credentials: remove them (the proxy "
            "token authenticates; httpx would send them as Basic auth in its place)"
        )
    return url


def check_token(token: str) -> None:
    """`ConfigError` (never quoting the token) unless it is printable ASCII without spaces."""
    if not _TOKEN.fullmatch(token):
        raise ConfigError(
            "the proxy token must be printable ASCII without spaces or line breaks "
            f"({len(token)} characters given; the token is not shown)"
        )


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine (localhost, 127.0.0.0/8, ::1)."""
    host = host.strip("[]").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def environment_proxy(base_url: str) -> tuple[str | None, str]:
    """The proxy URL a request to ``base_url`` goes through, and the variable naming it.

    Follows httpx: ``{scheme}_proxy`` then ``all_proxy`` (either case), ``NO_PROXY``
    exempts hosts; a loopback base URL never takes a proxy.
    """
    parts = _split(base_url)
    host = parts.hostname or ""
    if is_loopback(host):
        return None, ""
    proxies = urllib.request.getproxies()
    for scheme in (parts.scheme, "all"):
        value = proxies.get(scheme)
        if value:
            if _BYPASS(host, proxies):
                return None, ""
            url = value if "://" in value else f"http://{value}"
            return url, f"{scheme.upper()}_PROXY"
    return None, ""


def proxy_error(variable: str, proxy: str, exc: BaseException) -> ConfigError:
    """The `ConfigError` for a proxy variable httpx cannot use (credentials not shown)."""
    scheme = proxy.partition("://")[0][:20]
    return ConfigError(
        f"the environment variable {variable} (or its lower-case form) names a proxy "
        f"({scheme}://...) that cannot be used: {type(exc).__name__}: {_first_line(exc)}; "
        "use an http:// or https:// proxy (socks5:// needs httpx[socks]), or unset it"
    )


class _RedactTokens(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self.tokens: set[str] = set()
        self.lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        tokens = self.tokens
        if not tokens:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a broken format string is the handler's to report
            return True
        cleaned = message
        for token in sorted(tokens, key=len, reverse=True):
            cleaned = cleaned.replace(token, _REDACTED)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        return True


_FILTER: Final = _RedactTokens()


def watch_token(token: str) -> None:
    """Redact ``token`` from every httpx and httpcore log record from now on."""
    if not token:
        return
    with _FILTER.lock:
        if not _FILTER.tokens:
            for name in _HTTP_LOGGERS:
                logging.getLogger(name).addFilter(_FILTER)
        _FILTER.tokens = {*_FILTER.tokens, token}


def watched_tokens() -> frozenset[str]:
    """Every token `watch_token` was given (what telemetry content must never show)."""
    return frozenset(_FILTER.tokens)


def _first_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else "no detail"
    return text[:200]


def _shown(url: str) -> str:
    # A URL that fails to parse may still hold credentials: show its scheme and length only.
    if "@" in url:
        return f"{url.partition('://')[0][:10]}://... ({len(url)} characters)"
    return repr(url[:200])
