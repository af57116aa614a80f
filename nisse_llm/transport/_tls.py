"""The verifying TLS context every client shares, with its CA bundle read at first use.

httpx's default context (``httpx.create_ssl_context()``) reads certifi's bundle, or the
file or folder ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` names, when it is made: about 15 ms of
CPU, most of what making a client costs. A client of a plain-http proxy (the usual
loopback LiteLLM) never shakes hands, so it should never pay that. This context is set
up as httpx's (same protocol, verify mode, host-name check, flags and key-log file) and
chooses its trust source the same way at creation, but loads it just before its first
handshake. Nothing is verified less: until it is loaded the context trusts no one.
"""

from __future__ import annotations

import functools
import os
import ssl
import sys
import threading
from typing import Any


class DeferredTrustContext(ssl.SSLContext):
    """A client `ssl.SSLContext` whose CA certificates load before its first handshake."""

    _trust: tuple[str | None, str | None]
    _trust_lock: threading.Lock
    _trust_loaded: bool

    def load_trust(self) -> None:
        """Load the chosen CA certificates now (once; later calls do nothing)."""
        if self._trust_loaded:
            return
        with self._trust_lock:
            if not self._trust_loaded:
                cafile, capath = self._trust
                self.load_verify_locations(cafile=cafile, capath=capath)
                self._trust_loaded = True

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        self.load_trust()
        return super().wrap_socket(*args, **kwargs)

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        self.load_trust()
        return super().wrap_bio(*args, **kwargs)


def _trust_source() -> tuple[str | None, str | None]:
    # httpx's choice, in its order: SSL_CERT_FILE, then SSL_CERT_DIR, then certifi.
    if cafile := os.environ.get("SSL_CERT_FILE"):
        return cafile, None
    if capath := os.environ.get("SSL_CERT_DIR"):
        return None, capath
    import certifi  # httpx's own dependency

    return certifi.where(), None


def deferred_trust_context() -> DeferredTrustContext:
    """A new context set up as ``httpx.create_ssl_context()`` makes one, trust not yet read."""
    context = DeferredTrustContext(ssl.PROTOCOL_TLS_CLIENT)
    context.verify_mode = ssl.CERT_REQUIRED
    context.check_hostname = True
    if sys.version_info >= (3, 13):  # what ssl.create_default_context adds from 3.13 on
        context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN | ssl.VERIFY_X509_STRICT
    keylog = os.environ.get("SSLKEYLOGFILE")
    if keylog and not sys.flags.ignore_environment:
        context.keylog_filename = keylog
    context._trust = _trust_source()
    context._trust_lock = threading.Lock()
    context._trust_loaded = False
    return context


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """The one verifying context every client shares (see the module's docstring)."""
    return deferred_trust_context()
