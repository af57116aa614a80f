"""The shared TLS context: set up as httpx's, trusting nothing until its first handshake.

A client of a plain-http proxy never reads a CA bundle; a client of an https proxy reads
the one httpx would (``SSL_CERT_FILE``, ``SSL_CERT_DIR``, else certifi) and verifies the
server against it, sync and async, through the real httpx/httpcore stack.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trustme

from nisse_llm import (
    AssistantText,
    AsyncLiteLLMClient,
    LiteLLMClient,
    UpstreamUnavailable,
    UserText,
)
from nisse_llm.transport import _tls
from nisse_llm.transport._tls import DeferredTrustContext, deferred_trust_context
from tests.transport.loopback import LoopbackServer, serve


def _settings(context: ssl.SSLContext) -> dict[str, Any]:
    return {
        "protocol": context.protocol,
        "verify_mode": context.verify_mode,
        "check_hostname": context.check_hostname,
        "verify_flags": context.verify_flags,
        "options": context.options,
        "minimum_version": context.minimum_version,
        "maximum_version": context.maximum_version,
        "keylog_filename": context.keylog_filename,
    }


@pytest.fixture(autouse=True)
def _no_tls_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR", "SSLKEYLOGFILE"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("keylog", [False, True])
def test_context_is_set_up_as_httpx_sets_up_its_own(
    keylog: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if keylog:
        monkeypatch.setenv("SSLKEYLOGFILE", str(tmp_path / "keys.log"))
    assert _settings(deferred_trust_context()) == _settings(httpx.create_ssl_context())


def test_trust_is_read_only_when_asked_and_then_matches_httpx() -> None:
    context = deferred_trust_context()
    assert context.cert_store_stats()["x509_ca"] == 0
    context.load_trust()
    context.load_trust()  # a second call reads nothing more
    reference = httpx.create_ssl_context()
    assert context.cert_store_stats() == reference.cert_store_stats()
    assert context.cert_store_stats()["x509_ca"] > 0


@pytest.fixture(scope="module")
def authority() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def tls_server(authority: trustme.CA) -> Iterator[LoopbackServer]:
    """The loopback stand-in behind TLS, with a certificate for localhost from ``authority``."""
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    authority.issue_cert("localhost").configure_cert(server_context)
    yield from serve(tls=server_context)


def _https(server: LoopbackServer) -> str:
    return f"https://localhost:{server.server_address[1]}"


@pytest.fixture
def trusted(authority: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``SSL_CERT_FILE`` names a bundle holding only the test authority."""
    bundle = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(bundle))
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))


def test_the_trust_source_is_chosen_as_httpx_chooses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import certifi

    assert _tls._trust_source() == (certifi.where(), None)
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path))
    assert _tls._trust_source() == (None, str(tmp_path))
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
    assert _tls._trust_source() == (str(tmp_path / "ca.pem"), None)


@pytest.mark.usefixtures("trusted")
def test_a_handshake_reads_the_trust_and_verifies_against_it(tls_server: LoopbackServer) -> None:
    context = deferred_trust_context()
    with httpx.Client(verify=context) as http:
        reply = http.post(f"{_https(tls_server)}/chat/completions", json=_request("over tls"))
    assert reply.status_code == 200
    assert "over tls" in reply.text
    assert context.cert_store_stats()["x509_ca"] == 1  # the bundle's one authority


def test_a_server_the_trust_does_not_vouch_for_is_refused(tls_server: LoopbackServer) -> None:
    context = deferred_trust_context()  # certifi's bundle: the test authority is not in it
    with (
        httpx.Client(verify=context) as http,
        pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"),
    ):
        http.post(f"{_https(tls_server)}/chat/completions", json=_request("refused"))
    assert context.cert_store_stats()["x509_ca"] > 0  # loaded, then used to refuse


def _use(monkeypatch: pytest.MonkeyPatch, context: ssl.SSLContext) -> None:
    # Clients take the process's shared context when they are made; this test's own one
    # stands in for it (the shared one is made once, before this test's environment).
    monkeypatch.setattr("nisse_llm.transport._client_base.shared_ssl_context", lambda: context)


@pytest.mark.usefixtures("trusted")
def test_a_client_of_an_https_proxy_verifies_it(
    tls_server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    context = deferred_trust_context()
    _use(monkeypatch, context)
    with LiteLLMClient(_https(tls_server), "sk-test") as client:
        reply = client.complete([UserText(text="secure hello")], None, "gpt-x")
    assert reply == [AssistantText(text="echo: secure hello", model="gpt-x")]
    assert context.cert_store_stats()["x509_ca"] == 1


@pytest.mark.usefixtures("trusted")
async def test_an_async_client_of_an_https_proxy_verifies_it(
    tls_server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    context = deferred_trust_context()
    _use(monkeypatch, context)
    async with AsyncLiteLLMClient(_https(tls_server), "sk-test") as client:
        reply = await client.complete([UserText(text="secure hello")], None, "gpt-x")
    assert reply == [AssistantText(text="echo: secure hello", model="gpt-x")]
    assert context.cert_store_stats()["x509_ca"] == 1


async def test_an_async_client_refuses_a_server_it_cannot_verify(
    tls_server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _use(monkeypatch, deferred_trust_context())
    async with AsyncLiteLLMClient(_https(tls_server), "sk-test") as client:
        with pytest.raises(UpstreamUnavailable, match="CERTIFICATE_VERIFY_FAILED"):
            await client.complete([UserText(text="refused")], None, "gpt-x")


def test_a_client_of_a_plain_http_proxy_never_reads_a_bundle(
    server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    context = deferred_trust_context()
    _use(monkeypatch, context)
    with LiteLLMClient(server.base_url, "sk-test") as client:
        client.complete([UserText(text="plain")], None, "gpt-x")
    assert context.cert_store_stats()["x509_ca"] == 0
    assert isinstance(context, DeferredTrustContext)


def _request(text: str) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}]}
