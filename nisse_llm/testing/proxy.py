"""A real LiteLLM proxy as a test component: config written, process started, health awaited, stopped.

``python -m nisse_llm.testing.proxy`` runs one in front of a scripted model until Ctrl-C:
a local proxy to try an agent against, with no key and no network.

The proxy runs from its own venv (``litellm[proxy]==1.108.7``; ``make proxy``), named
by ``NISSE_LITELLM_BIN`` or found as ``.venv-proxy/bin/litellm`` in the current directory
or above it: nisse_llm never imports litellm. It needs no database:
one token checked by a small ``custom_auth`` hook (real 401s; real 403s for any
``limited_tokens``, each allowed only its models), deployment rate limits
and budgets kept in memory. The written config is JSON, which YAML loaders read as is.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self

import httpx

from nisse_llm.testing._process import ServerProcess, serve_until_interrupted, start_retrying

if TYPE_CHECKING:
    from nisse_llm.testing.script import RecordedRequest
    from nisse_llm.testing.turns import Turn

__all__ = [
    "CURRENT_MODELS",
    "LITELLM_BIN_ENV",
    "LITELLM_PIN",
    "LiteLLMProxy",
    "ProxyError",
    "ProxyModel",
    "ProxyNotInstalled",
    "ProxyStartError",
    "free_port",
    "litellm_executable",
    "scripted_models",
    "spawn_logged",
]

LITELLM_BIN_ENV = "NISSE_LITELLM_BIN"
LITELLM_PIN = "litellm[proxy]==1.108.7"
# Where `make proxy` installs it, relative to the checkout.
_PROXY_VENV_BIN = Path(".venv-proxy", "bin", "litellm")

# /health/liveliness answers 5 to 11 s after launch on an idle 2-core box, and was
# measured at 45 s on one shared with other heavy jobs.
DEFAULT_STARTUP_TIMEOUT_S = 90.0
# SIGTERM stops it in under 4 s (measured 0.3 to 3.5 s); past this, SIGKILL.
STOP_GRACE_S = 10.0

_AUTH_MODULE = "nisse_proxy_auth"
_TOKEN_ENV = "NISSE_PROXY_TOKEN"
_LIMITED_ENV = "NISSE_PROXY_LIMITED_TOKENS"
_LAUNCH_KEY_ENV = "NISSE_PROXY_LAUNCH_KEY"
# A custom_auth hook answering 401 for any other token; without a database LiteLLM
# answers a wrong master key with 400 "No connected db." instead. A limited token comes
# back with its models, which LiteLLM's own access check then enforces (403
# key_model_access_denied for any other model). It also accepts the key of this launch,
# which only the process started with it knows: the readiness check asks with it, so
# another server on the port (a stale proxy, even one given the same token) is never
# taken for this one.
_AUTH_HOOK = f'''"""One-token auth for a test proxy: 401 for any other token, no database needed."""

import json
import os

from fastapi import HTTPException, Request
from litellm.proxy._types import UserAPIKeyAuth


async def user_api_key_auth(request: Request, api_key: str) -> UserAPIKeyAuth:
    expected = os.environ["{_TOKEN_ENV}"]
    if api_key in (expected, "Bearer " + expected):
        return UserAPIKeyAuth(api_key=expected)
    limited = json.loads(os.environ.get("{_LIMITED_ENV}", "{{}}"))
    key = api_key.removeprefix("Bearer ")
    if key in limited:
        return UserAPIKeyAuth(api_key=key, models=limited[key])
    launch = os.environ["{_LAUNCH_KEY_ENV}"]
    if api_key in (launch, "Bearer " + launch):
        return UserAPIKeyAuth(api_key=launch)
    # Echo the key as LiteLLM's own auth errors do, so clients must redact it.
    raise HTTPException(
        status_code=401,
        detail=f"Authentication Error: invalid proxy token. Received API Key = {{api_key}}",
    )
'''


class ProxyError(RuntimeError):
    """The test proxy could not be used."""


class ProxyNotInstalled(ProxyError):
    """No LiteLLM executable was named (``NISSE_LITELLM_BIN``) or it does not exist."""


class ProxyStartError(ProxyError):
    """The proxy process died or never became healthy; the message carries its output."""


def litellm_executable(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The LiteLLM executable: ``explicit``, else ``$NISSE_LITELLM_BIN``, else the
    ``.venv-proxy/bin/litellm`` that ``make proxy`` installs, in the current directory or
    the nearest folder above it that has one; checked to exist."""
    raw = os.fspath(explicit) if explicit is not None else os.environ.get(LITELLM_BIN_ENV, "")
    if not raw:
        return _checkout_executable(Path.cwd())
    path = Path(raw).expanduser()
    if not _is_executable(path):
        raise ProxyNotInstalled(
            f"{LITELLM_BIN_ENV}={raw} is not an executable file: run `make proxy` "
            f"(installs {LITELLM_PIN}) or point {LITELLM_BIN_ENV} at a litellm executable"
        )
    return path


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _checkout_executable(start: Path) -> Path:
    """``start``'s or the nearest parent's ``.venv-proxy/bin/litellm``; else an error whose
    last line is the export that would name one installed in ``start``."""
    for folder in (start, *start.parents):
        found = folder / _PROXY_VENV_BIN
        if _is_executable(found):
            return found
    raise ProxyNotInstalled(
        f"no LiteLLM proxy executable: {LITELLM_BIN_ENV} is not set, and there is no "
        f"{_PROXY_VENV_BIN} in {start} or a folder above it. Install {LITELLM_PIN} there "
        "(`make proxy` does, in the nisse_llm checkout), then run from that folder or:\n"
        f"    export {LITELLM_BIN_ENV}={start / _PROXY_VENV_BIN}"
    )


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now (bound, read, released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def spawn_logged(
    argv: Sequence[str], log: Path, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in ``log``'s folder and in its own session (a Ctrl-C in the terminal
    goes to the caller alone, which stops it by its PID), stdin closed, stdout and stderr
    into ``log``; ``env`` replaces the environment when given."""
    with log.open("wb") as out:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=log.parent,
            env=env,
            start_new_session=True,
        )


@dataclass(frozen=True)
class ProxyModel:
    """One model entry (deployment) of the proxy config.

    ``name`` is what clients send; ``upstream_model`` (default: ``name``) what the
    upstream receives; ``api_base`` (default: the proxy's upstream) where it goes.
    """

    name: str
    provider: Literal["openai", "anthropic"]
    upstream_model: str | None = None
    api_base: str | None = None
    #: Requests per minute, enforced by the proxy (``enforce_model_rate_limits``).
    rpm: int | None = None
    #: Spend limit in USD per ``budget_duration``; needs the per-token costs to bite.
    max_budget: float | None = None
    budget_duration: str = "1d"
    input_cost_per_token: float | None = None
    output_cost_per_token: float | None = None
    extra_params: Mapping[str, Any] = field(default_factory=dict)
    #: The entry's ``model_info`` (limits and prices the proxy reports for it), if any.
    model_info: Mapping[str, Any] | None = None

    def entry(self, upstream_base: str) -> dict[str, Any]:
        """The ``model_list`` entry for this model."""
        params: dict[str, Any] = {
            "model": f"{self.provider}/{self.upstream_model or self.name}",
            "api_base": self.api_base or upstream_base,
            "api_key": "scripted-upstream-key",
        }
        if self.rpm is not None:
            params["rpm"] = self.rpm
        if self.max_budget is not None:
            params["max_budget"] = self.max_budget
            params["budget_duration"] = self.budget_duration
        if self.input_cost_per_token is not None:
            params["input_cost_per_token"] = self.input_cost_per_token
        if self.output_cost_per_token is not None:
            params["output_cost_per_token"] = self.output_cost_per_token
        params.update(self.extra_params)
        entry: dict[str, Any] = {"model_name": self.name, "litellm_params": params}
        if self.model_info is not None:
            entry["model_info"] = dict(self.model_info)
        return entry


#: Current models, each an entry of `scripted_models` under its own name.
CURRENT_MODELS: tuple[tuple[str, Literal["openai", "anthropic"]], ...] = (
    ("claude-opus-5-5", "anthropic"),
    ("claude-sonnet-5-5", "anthropic"),
    ("claude-haiku-5-5", "anthropic"),
    ("claude-opus-4-8", "anthropic"),
    ("gpt-6-astra", "openai"),
    ("gpt-5.6-sol", "openai"),
    ("gpt-5.5", "openai"),
    ("gpt-5.4-mini", "openai"),
)


def scripted_models(dead_base: str) -> list[ProxyModel]:
    """The entries the integration suite uses, for an ``openai/`` and an ``anthropic/`` model.

    ``*-scripted`` and ``*-alt``: plain (two, for per-model rules); ``*-rpm1``: one
    request a minute; ``*-budget``: a budget the first call crosses; ``*-down``: an
    upstream nobody listens on (``dead_base``); ``*-priced``: a model the proxy's price
    map knows (gpt-5.4-mini, claude-sonnet-4-6); ``*-tiny``: a 300-token window. And one
    entry named after each current model (`CURRENT_MODELS`): the proxy treats real names
    as the real models (it maps their reasoning, prices them, knows their windows), so a
    test that names them sees what production sees.
    """
    # Any real call costs more than this budget, so the proxy refuses the *next* call.
    budget, cost = 1e-6, 1e-3
    families: tuple[tuple[str, Literal["openai", "anthropic"]], ...] = (
        ("gpt", "openai"),
        ("claude", "anthropic"),
    )
    models: list[ProxyModel] = []
    for family, provider in families:
        models += [
            ProxyModel(f"{family}-scripted", provider),
            ProxyModel(f"{family}-alt", provider),
            ProxyModel(f"{family}-rpm1", provider, rpm=1),
            ProxyModel(
                f"{family}-budget",
                provider,
                max_budget=budget,
                input_cost_per_token=cost,
                output_cost_per_token=cost,
            ),
            ProxyModel(f"{family}-down", provider, api_base=dead_base),
        ]
    # Real price-map models (limits and prices the proxy knows), and a tiny window of an
    # underlying model of its own (an override reaches every entry of the same model).
    window = {"max_input_tokens": 300, "max_output_tokens": 100}
    models += [
        ProxyModel("gpt-priced", "openai", upstream_model="gpt-5.4-mini"),
        ProxyModel("claude-priced", "anthropic", upstream_model="claude-sonnet-4-6"),
        ProxyModel("gpt-tiny", "openai", upstream_model="nisse-tiny-gpt", model_info=window),
        ProxyModel(
            "claude-tiny", "anthropic", upstream_model="nisse-tiny-claude", model_info=window
        ),
        # A model whose info says it cannot reason (what `config check --online` refuses
        # a reasoning profile for).
        *(ProxyModel(name, provider) for name, provider in CURRENT_MODELS),
        ProxyModel(
            "gpt-noreason",
            "openai",
            upstream_model="nisse-noreason-gpt",
            model_info={"supports_reasoning": False, "max_output_tokens": 32768},
        ),
    ]
    return models


class LiteLLMProxy(ServerProcess):
    """A LiteLLM proxy process on a free loopback port, in front of ``upstream_base``.

    Use as a context manager, or `start` / `stop`. ``base_url`` and ``token`` are
    what a nisse_llm client needs. Every deployment reaches the upstream once per
    call: ``num_retries: 0``; a slower upstream gets 408 after ``request_timeout_s``.
    A ``port`` something else holds is refused before launching (`ProxyStartError`), and
    the process is ready only when it answers with a key given to it alone, never when
    another server on the port does.
    """

    STOP_GRACE_S = STOP_GRACE_S

    def __init__(
        self,
        upstream_base: str,
        *,
        models: Sequence[ProxyModel] | None = None,
        executable: str | os.PathLike[str] | None = None,
        token: str | None = None,
        request_timeout_s: float = 3.0,
        startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S,
        host: str = "127.0.0.1",
        settings: Mapping[str, Mapping[str, Any]] | None = None,
        env: Mapping[str, str] | None = None,
        port: int | None = None,
        limited_tokens: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self.upstream_base = upstream_base.rstrip("/")
        #: Extra keys per config section (``{"litellm_settings": {"callbacks": ["otel"]}}``).
        self.settings = {section: dict(keys) for section, keys in (settings or {}).items()}
        #: Extra environment variables for the proxy process.
        self.env = dict(env or {})
        self.executable = litellm_executable(executable)
        #: The one token the proxy accepts (``Authorization: Bearer`` or ``x-api-key``).
        self.token = token or "sk-nisse-" + secrets.token_hex(12)
        #: More tokens the proxy accepts, each for its models only (403 for any other).
        self.limited_tokens = {key: list(models) for key, models in (limited_tokens or {}).items()}
        self.request_timeout_s = request_timeout_s
        self.startup_timeout_s = startup_timeout_s
        self.host = host
        #: The port to listen on (``None``: a free one, chosen at each start).
        self.port = port
        self.models = (
            list(models)
            if models is not None
            else scripted_models(f"http://{host}:{free_port(host)}")
        )
        super().__init__()
        self._launched_at = 0.0
        self._launch_key = ""
        #: Seconds from launch to a healthy answer, after `start`.
        self.startup_s: float | None = None

    # -- what clients need -------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` of the running proxy."""
        if self._port is None:
            raise ProxyError("the proxy is not running; call start() first")
        return f"http://{self.host}:{self._port}"

    @property
    def pid(self) -> int | None:
        """The proxy's process id while it runs."""
        return self._process.pid if self._process is not None else None

    @property
    def config_path(self) -> Path:
        """Where the config was written (inside a private temporary directory)."""
        if self._workdir is None:
            raise ProxyError("the proxy is not running; call start() first")
        return self._workdir / "litellm.yaml"

    def config(self) -> dict[str, Any]:
        """The proxy config as written: model entries, settings (with ``settings`` merged
        in, section by section), auth."""
        config = self._base_config()
        for section, keys in self.settings.items():
            config[section] = {**config.get(section, {}), **keys}
        return config

    def _base_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {
            "model_list": [model.entry(self.upstream_base) for model in self.models],
            "litellm_settings": {
                "num_retries": 0,
                "request_timeout": self.request_timeout_s,
                # Without it /v1/messages to an openai/ model goes to the Responses API.
                "use_chat_completions_url_for_anthropic_messages": True,
            },
            "router_settings": {
                "num_retries": 0,
                "optional_pre_call_checks": ["enforce_model_rate_limits"],
            },
            "general_settings": {
                "master_key": f"os.environ/{_TOKEN_ENV}",
                "custom_auth": f"{_AUTH_MODULE}.user_api_key_auth",
            },
        }
        if self.limited_tokens:
            # LiteLLM checks a custom-auth key's models only when both are set.
            config["litellm_settings"]["enable_post_custom_auth_checks"] = True
            config["general_settings"]["custom_auth_run_common_checks"] = True
        return config

    def output(self, *, tail: int = 12_000) -> str:
        """The process's combined stdout and stderr so far (the last ``tail`` characters)."""
        if self._workdir is None:
            return ""
        log = self._workdir / "proxy.log"
        try:
            text = log.read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return text[-tail:]

    # -- lifecycle -----------------------------------------------------------------------

    def launch(self) -> None:
        """Launch the proxy without waiting for it (a fleet launches every instance, then
        waits for each: `wait_healthy`); `start` does both, retrying a lost port."""
        self._launch()

    def wait_healthy(self) -> None:
        """Wait until the launched proxy is healthy (`ProxyStartError` if it is not in time)."""
        self._wait_healthy()

    def start(self) -> Self:
        """Write the config, launch the proxy and wait until it is healthy."""
        if self._process is None:
            start_retrying(self._launch, self._wait_healthy, self.stop, ProxyStartError)
        return self

    def _launch(self) -> None:
        if self.port is not None:
            _refuse_a_port_in_use(self.host, self.port)
        self._workdir = Path(tempfile.mkdtemp(prefix="nisse-litellm-"))
        (self._workdir / f"{_AUTH_MODULE}.py").write_text(_AUTH_HOOK)
        self.config_path.write_text(json.dumps(self.config(), indent=2))
        self._port = self.port if self.port is not None else free_port(self.host)
        self._launch_key = "sk-launch-" + secrets.token_hex(16)
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL",)}
        env.update(
            {
                # Else it downloads its price map at start (no network here, nor in CI).
                "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                _TOKEN_ENV: self.token,
                _LIMITED_ENV: json.dumps(self.limited_tokens),
                _LAUNCH_KEY_ENV: self._launch_key,
                "PYTHONUNBUFFERED": "1",
                **self.env,
            }
        )
        argv = [
            str(self.executable),
            "--config",
            str(self.config_path),
            "--host",
            self.host,
            "--port",
            str(self._port),
        ]
        self._watch(spawn_logged(argv, self._workdir / "proxy.log", env))
        self._launched_at = time.monotonic()

    def _wait_healthy(self) -> None:
        """Until the process started answers: ``GET /v1/models`` accepted with this launch's
        key and listing this config's models. ``/health/liveliness`` would not do: any
        server on the port answers it."""
        process = self._process
        assert process is not None
        deadline = self._launched_at + self.startup_timeout_s
        url = f"{self.base_url}/v1/models"
        served = {model.name for model in self.models}
        headers = {"Authorization": f"Bearer {self._launch_key}"}
        with httpx.Client(timeout=1.0, headers=headers) as http:
            while True:
                code = process.poll()
                if code is not None:
                    raise ProxyStartError(
                        f"LiteLLM proxy exited with code {code} before becoming healthy "
                        f"(config {self.config_path}); its output:\n{self.output()}"
                    )
                with contextlib.suppress(httpx.TransportError):
                    if _lists(http.get(url), served):
                        self.startup_s = time.monotonic() - self._launched_at
                        return
                if time.monotonic() > deadline:
                    raise ProxyStartError(
                        f"LiteLLM proxy not healthy after {self.startup_timeout_s:.0f} s at "
                        f"{url}; its output:\n{self.output()}"
                    )
                time.sleep(0.1)


def _lists(answer: httpx.Response, served: set[str]) -> bool:
    """Whether ``answer`` is a 200 model list naming every model of ``served``."""
    if answer.status_code != 200:
        return False
    try:
        body = answer.json()
    except ValueError:
        return False
    listed = body.get("data") if isinstance(body, dict) else None
    if not isinstance(listed, list):
        return False
    return served <= {entry.get("id") for entry in listed if isinstance(entry, dict)}


def _refuse_a_port_in_use(host: str, port: int) -> None:
    """Raise `ProxyStartError` when a socket is bound to ``port`` (TIME_WAIT leftovers
    aside, as uvicorn's own bind allows them)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise ProxyStartError(
                f"port {port} on {host} is taken by another process ({exc.strerror}): "
                "stop it, or leave port unset to get a free one"
            ) from None


#: The models ``python -m nisse_llm.testing.proxy`` serves unless told others.
_LOCAL_MODELS = tuple(name for name, _ in CURRENT_MODELS)


def _scripted_answer(request: RecordedRequest) -> Turn:
    """What the scripted model says to any request: it names the last thing it was told."""
    from nisse_llm.testing.turns import reply

    if request.last_tool_result is not None:
        return reply(f"Scripted answer; the tool said: {request.last_tool_result[:200]}")
    return reply(f"Scripted answer to: {(request.last_user_text or '')[:200]}")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m nisse_llm.testing.proxy``: a real LiteLLM proxy in front of a scripted
    model (no key, no network), until Ctrl-C or SIGTERM."""
    from nisse_llm.testing.script import Script
    from nisse_llm.testing.server import ScriptedServer

    parser = argparse.ArgumentParser(
        prog="python -m nisse_llm.testing.proxy", description=main.__doc__
    )
    parser.add_argument("--port", type=int, default=4000, help="port to listen on (4000)")
    parser.add_argument("--token", help="the token it accepts (default: a new random one)")
    parser.add_argument(
        "--model",
        action="append",
        dest="models",
        metavar="NAME",
        help="a model name to serve, repeatable (claude- and anthropic/ names speak "
        f"Anthropic's format, others OpenAI's); default: {', '.join(_LOCAL_MODELS)}",
    )
    args = parser.parse_args(argv)
    names = args.models or list(_LOCAL_MODELS)
    models = [
        ProxyModel(name, "anthropic" if name.startswith(("claude-", "anthropic/")) else "openai")
        for name in names
    ]

    def start(stack: contextlib.ExitStack) -> list[str]:
        upstream = stack.enter_context(ScriptedServer(Script(fallback=_scripted_answer)))
        proxy = stack.enter_context(
            LiteLLMProxy(upstream.base_url, models=models, token=args.token, port=args.port)
        )
        return [
            "A real LiteLLM proxy in front of a scripted model (no key, no network).",
            f"proxy: {proxy.base_url} (pid {proxy.pid}); models: {', '.join(names)}",
            f"export NISSE_LLM_BASE_URL={proxy.base_url}",
            f"export NISSE_LLM_TOKEN={proxy.token}",
        ]

    return serve_until_interrupted(start, ProxyError)


if __name__ == "__main__":
    raise SystemExit(main())
