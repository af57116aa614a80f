"""Write the sync clients, routers, scripted client, task stores and fleet driver from
their async sources (unasync).

``python -m scripts.gen_sync`` rewrites every ``_sync/`` module listed in `SOURCES` from
its ``_async/`` twin: ``async``/``await`` dropped, the names in `NAMES` swapped (in code,
and in docstrings and comments, with the phrases in `PHRASES`), then ruff-formatted. The
generated files are committed. ``--check`` writes nothing: it names each stale file and
exits 1 (``make lint`` runs it; tests/test_generated_sync.py checks the same).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import tokenize_rt
import unasync

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "python -m scripts.gen_sync"
#: The async sources (each generates the same path with ``_async`` -> ``_sync``).
SOURCES = (
    "nisse_llm/transport/_async/headroom.py",
    "nisse_llm/transport/_async/clients.py",
    "nisse_llm/transport/_async/routers.py",
    "nisse_llm/testing/_async/client.py",
    "nisse_llm/agent/_async/task.py",
    "nisse_llm/agent/_async/reads.py",
    "nisse_llm/agent/_async/delegation.py",
    "nisse_llm/agent/_async/opening.py",
    "bench/_async/fleet_driver.py",
    "nisse_llm/task/_async/store.py",
    "nisse_llm/task/_async/filestore.py",
    "nisse_llm/task/_async/pgschema.py",
    "nisse_llm/task/_async/pgpool.py",
    "nisse_llm/task/_async/postgres.py",
)
#: Async name -> sync name, beside unasync's own (``__aenter__``, ``StopAsyncIteration``...).
NAMES = {
    "_async": "_sync",
    "AsyncClosing": "Closing",
    "AsyncReplyStream": "ReplyStream",
    "AsyncClientLimits": "ClientLimits",
    "AsyncRouterLimits": "RouterLimits",
    "AsyncRoleRouter": "RoleRouter",
    "AsyncLiteLLMClient": "LiteLLMClient",
    "ASYNC_KINDS": "SYNC_KINDS",
    "AsyncClient": "Client",
    "AsyncBaseTransport": "BaseTransport",
    "async_transport": "sync_transport",
    "aread": "read",
    "aiter_bytes": "iter_bytes",
    "aclose": "close",
    "anext": "next",
    "aplan_compaction": "plan_compaction",
    "asummarize": "summarize",
    "AsyncScriptedClient": "ScriptedClient",
    "AsyncCounting": "Counting",
    "AsyncHTTPTransport": "HTTPTransport",
    "handle_async_request": "handle_request",
    "run_async": "run_sync",
    "AsyncTask": "Task",
    "AsyncTaskReads": "TaskReads",
    "arun": "run",
    "AsyncReconcile": "Reconcile",
    "areconciled": "reconciled",
    "AsyncStartHook": "StartHook",
    "AsyncCallObserver": "CallObserver",
    "AsyncFileTaskStore": "FileTaskStore",
    "AsyncStoreArg": "StoreArg",
    "AsyncTaskStore": "TaskStore",
    "open_async_store": "open_store",
    "open_async_task_store": "open_task_store",
    "AsyncPostgresTaskStore": "PostgresTaskStore",
    "AbstractAsyncContextManager": "AbstractContextManager",
    "AsyncConnection": "Connection",
    "AsyncCursor": "Cursor",
    "AsyncConnectionPool": "ConnectionPool",
    "AsyncStorePool": "StorePool",
}
#: Phrases of docstrings and comments (code loses its ``async``/``await`` to unasync).
PHRASES = {"async with": "with", "async for": "for", "await ": ""}


def _prose(text: str, names: dict[str, str]) -> str:
    for phrase, sync in PHRASES.items():
        text = text.replace(phrase, sync)
    return re.sub(r"\b\w+\b", lambda m: _name(m[0], names), text)


def _name(word: str, names: dict[str, str]) -> str:
    if word in names:
        return names[word]
    # unasync's own rule for the names it is not given: AsyncThing -> SyncThing
    return "Sync" + word[5:] if re.fullmatch(r"Async[A-Z]\w*", word) else word


def _header(source: str) -> str:
    return f"# Generated from {source} by scripts/gen_sync.py (unasync); do not edit.\n"


def generate() -> dict[str, str]:
    """Sync path -> its generated text (nothing is written)."""
    rule = unasync.Rule("/_async/", "/_sync/", additional_replacements=NAMES)
    # Prose keeps naming the source (``_async/...``); only code imports the sync twin.
    names = {a: s for a, s in rule.token_replacements.items() if a != "_async"}
    out: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        copies = []
        for source in SOURCES:
            copy = Path(tmp, source)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / source, copy)
            copies.append(str(copy))
        unasync.unasync_files(copies, [rule])
        for source in SOURCES:
            target = source.replace("/_async/", "/_sync/")
            tokens = tokenize_rt.src_to_tokens(Path(tmp, target).read_text(encoding="utf-8"))
            text = tokenize_rt.tokens_to_src(
                [
                    t._replace(src=_prose(t.src, names)) if t.name in ("STRING", "COMMENT") else t
                    for t in tokens
                ]
            )
            out[target] = _format(_header(source) + text, target)
    return out


def _format(text: str, path: str) -> str:
    ruff = [sys.executable, "-m", "ruff"]
    for args in (["check", "--fix", "--quiet", "--exit-zero"], ["format", "--quiet"]):
        done = subprocess.run(
            [*ruff, *args, "--stdin-filename", path, "-"],
            input=text,
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        )
        text = done.stdout
    return text


def stale(generated: dict[str, str]) -> list[str]:
    """The sync paths whose committed file is missing or differs from ``generated``."""
    return [
        target
        for target, text in generated.items()
        if not (ROOT / target).exists() or (ROOT / target).read_text(encoding="utf-8") != text
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 naming each stale file"
    )
    args = parser.parse_args(argv)
    generated = generate()
    behind = stale(generated)
    if args.check:
        for target in behind:
            print(f"{target} is stale: run `{COMMAND}` and commit it", file=sys.stderr)
        return 1 if behind else 0
    for target in behind:
        (ROOT / target).write_text(generated[target], encoding="utf-8")
        print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
