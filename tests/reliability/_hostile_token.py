"""One probe of where the token goes, or of the log store, in its own process, measured.

Run as ``python -m tests.reliability._hostile_token CASE MODE DIR``. Prints one JSON
object: the outcome (``ok``, or the class raised: an `LLMError` or `LogFileReplaced`;
anything else escapes and fails the process), the seconds and peak memory of the probe
(measured as in `tests.reliability._hostile`), whether the token showed anywhere (the
error, every exception chained to it, its traceback, every log record down to DEBUG),
and what each raw loopback server saw.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import logging
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nisse_llm.config.settings import Pin, load_settings
from nisse_llm.errors import LLMError
from nisse_llm.events.canonical import StoredEvent, UserText
from nisse_llm.task.logstore import FileTaskStore, LogFileReplaced
from tests.reliability._rawserver import Conn, RawServer, echo, head
from tests.transport.harness import EVENTS, MODEL, TOKEN
from tests.transport.loopback import RESPONSES

ROLES = (
    '[roles]\nexecutor = "claude-x"\nplanner = "gpt-4o-mini"\ndelegate = "d"\nconsultant = "c"\n'
)


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(record.getMessage())
        self.texts += [f"{k}={v!r}" for k, v in vars(record).items()]


def _completion(conn: Conn) -> None:
    body = (RESPONSES / "oai_text_plain.json").read_bytes()
    conn.send(
        head(
            200,
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(body))),
            chunked=False,
        )
    )
    conn.send(body)


def _client(mode: str, base_url: str) -> Any:
    from nisse_llm.transport.clients import AsyncLiteLLMClient, LiteLLMClient

    cls = LiteLLMClient if mode == "sync" else AsyncLiteLLMClient
    return cls(base_url, TOKEN, timeout_s=1.0, call_deadline_s=2.0, rate_limit_retries=0)


def _call(client: Any) -> None:
    async def run() -> None:
        try:
            result = client.complete(EVENTS, None, MODEL["openai_chat"])
            if inspect.isawaitable(result):
                await result
        finally:
            closing = client.aclose() if hasattr(client, "aclose") else client.close()
            if inspect.isawaitable(closing):
                await closing

    asyncio.run(run())


def _echo_probe(where: str, mode: str) -> Callable[[dict[str, Any]], None]:
    def probe(seen: dict[str, Any]) -> None:
        with RawServer(echo(where)) as raw:
            try:
                _call(_client(mode, raw.base_url))
            finally:
                seen["tokens_sent"] = [Conn(None, r, raw.stop).token for r in raw.requests]  # type: ignore[arg-type]

    return probe


def _userinfo(mode: str) -> Callable[[dict[str, Any]], None]:
    def probe(seen: dict[str, Any]) -> None:
        with RawServer(_completion) as raw:
            try:
                _call(_client(mode, raw.base_url.replace("//", f"//user:{TOKEN}@")))
            finally:
                seen["connections"] = raw.connections

    return probe


def _proxy_loopback(mode: str) -> Callable[[dict[str, Any]], None]:
    def probe(seen: dict[str, Any]) -> None:
        with RawServer(_completion) as proxy, RawServer(_completion) as direct:
            os.environ["HTTP_PROXY"] = os.environ["ALL_PROXY"] = proxy.base_url
            try:
                _call(_client(mode, direct.base_url))
            finally:
                seen["proxy_connections"] = proxy.connections
                seen["connections"] = direct.connections

    return probe


def _forged_pin(directory: Path) -> Callable[[dict[str, Any]], None]:
    def probe(seen: dict[str, Any]) -> None:
        with RawServer(_completion) as operator, RawServer(_completion) as attacker:
            path = directory / "c.toml"
            path.write_text(f'[llm]\nbase_url = "{operator.base_url}"\n' + ROLES)
            path.chmod(0o600)
            os.environ["NISSE_LLM_TOKEN"] = TOKEN
            settings = load_settings(path)
            record = settings.pin().record()
            body = {k: v for k, v in record.items() if k != "fingerprint"}
            body["base_url"] = attacker.base_url
            text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            body["fingerprint"] = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
            try:
                Pin.from_record(body, TOKEN, base_url=settings.llm.base_url)
            finally:
                seen["connections"] = attacker.connections

    return probe


def _store(change: str, directory: Path) -> Callable[[dict[str, Any]], None]:
    def probe(seen: dict[str, Any]) -> None:
        path = directory / "log.jsonl"
        store = FileTaskStore(path)
        store.append(StoredEvent.now(0, UserText(text="acknowledged")))
        moved = directory / "log.jsonl.1"
        if change == "rotated":
            path.rename(moved)
            path.write_bytes(b"")
        else:
            path.unlink()
        try:
            store.append(StoredEvent.now(1, UserText(text="must not be acknowledged")))
        finally:
            store.close()
            files = [p for p in (path, moved) if p.exists()]
            seen["records_in_files"] = sum(len(FileTaskStore(p).read().records) for p in files)

    return probe


def _case(name: str, mode: str, directory: Path) -> Callable[[dict[str, Any]], None]:
    if name.startswith("echo_"):
        return _echo_probe(name.removeprefix("echo_"), mode)
    if name == "userinfo":
        return _userinfo(mode)
    if name == "proxy_loopback":
        return _proxy_loopback(mode)
    if name == "forged_pin":
        return _forged_pin(directory)
    if name in ("store_rotated", "store_deleted"):
        return _store(name.removeprefix("store_"), directory)
    raise SystemExit(f"unknown case {name!r}")


def _texts(exc: BaseException) -> list[str]:
    texts = ["".join(traceback.format_exception(exc))]
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        texts += [str(current), repr(current), repr(vars(current))]
        todo += [current.__cause__, current.__context__]
    return texts


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def main(name: str, mode: str, directory: str) -> None:
    probe = _case(name, mode, Path(directory))
    records = _Records()
    logging.getLogger().addHandler(records)
    logging.getLogger().setLevel(logging.DEBUG)
    seen: dict[str, Any] = {}
    Path("/proc/self/clear_refs").write_text("5")
    before = _status_mb("VmRSS")
    start = time.perf_counter()
    texts: list[str] = []
    try:
        probe(seen)
        outcome, message = "ok", ""
    except (LLMError, LogFileReplaced) as exc:
        outcome, message = type(exc).__name__, str(exc)[:400]
        texts = _texts(exc)
    seconds = time.perf_counter() - start
    report = {
        "case": name,
        "mode": mode,
        "outcome": outcome,
        "message": message,
        "seconds": round(seconds, 3),
        "growth_mb": round(_status_mb("VmHWM") - before, 1),
        "token_in_error": any(TOKEN in text for text in texts),
        "token_in_logs": any(TOKEN in text for text in records.texts),
        "log_records": len(records.texts),
        **seen,
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main(*sys.argv[1:4])
