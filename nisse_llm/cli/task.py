"""``nisse-llm task``: list, show, export and import the tasks of the configured store.

The store is ``--store`` (a folder or a ``postgresql://`` URL), else the ``task_store``
setting of ``--config``. Reading never takes a task's lease; ``import`` appends to a new
task as its one driver. An export is the task's records as stored, one JSON line each,
so ``task export K | task import --key K -`` moves a task between stores byte for byte.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from pydantic import SecretStr

from nisse_llm.cli._settings import add_config_argument, load_for
from nisse_llm.cli._terminal import printable, table
from nisse_llm.config.settings import Settings
from nisse_llm.errors import LogCorrupt
from nisse_llm.log.canonical import AssistantText, ToolCall, ToolResult, UserText
from nisse_llm.task.dsn import redacted_url
from nisse_llm.task.lease import FileLease
from nisse_llm.task.logstore import LogRead, LogStore
from nisse_llm.task.records import UsageTotal
from nisse_llm.task.stores import is_database_url, open_task_store, task_folder

__all__ = ["register", "store_shown"]

_TEXT_WIDTH = 72


@contextmanager
def _opened(args: argparse.Namespace, key: str) -> Iterator[LogStore]:
    with open_task_store(key, _settings(args)) as store:
        yield store


def _settings(args: argparse.Namespace) -> Settings:
    if args.store is None:
        return load_for(args, require_roles=())
    return Settings.model_construct(task_store=SecretStr(args.store))


def _list(args: argparse.Namespace) -> int:
    settings = _settings(args)
    configured = settings.task_store.get_secret_value() if settings.task_store else None
    holders: dict[str, str] = {}
    if configured is not None and is_database_url(configured):
        from nisse_llm.task.postgres import task_keys

        found = task_keys(configured)
        keys = [row["key"] for row in found]
        holders = {row["key"]: f"{row['holder']}" for row in found if row["holder"]}
    else:
        folder = task_folder(settings)
        keys = sorted(path.stem for path in folder.glob("*.jsonl")) if folder.is_dir() else []
        holders = {key: _file_lease(folder / f"{key}.jsonl") for key in keys}
    rows = [("KEY", "PIN", "STATUS", "CALLS", "COST_USD", "LAST_ACTIVITY", "LEASE")]
    unreadable = 0
    for key in keys:
        lease = holders.get(key, "-")
        try:
            with open_task_store(key, settings) as store:
                found_read = store.read()
        except LogCorrupt as exc:  # one damaged task must not hide the others
            unreadable += 1
            print(f"warning: {printable(str(exc))}", file=sys.stderr)
            rows.append((key, "-", "corrupt", "-", "-", "-", lease))
            continue
        total = found_read.usage.total
        rows.append(
            (
                key,
                _fingerprint(found_read),
                _status(found_read),
                str(total.calls),
                _cost(total),
                _last(found_read),
                lease,
            )
        )
    print(f"{len(keys)} task(s) in {store_shown(settings)}")
    table(sys.stdout, rows)
    return 1 if unreadable else 0


def _file_lease(task_file: Path) -> str:
    """The LEASE column of a task file: its holder, ``(unknown)`` when held with no
    readable record, ``-`` when not held, ``?`` where the system cannot tell."""
    try:
        found = FileLease.holder_of(task_file)
    except OSError:
        return "?"
    if found is None:
        return "-"
    holder, _ = found
    return printable(holder) if holder is not None else "(unknown)"


def _show(args: argparse.Namespace) -> int:
    with _opened(args, args.key) as store:
        found = store.read()
    print(f"task {args.key}: pin {_fingerprint(found)}, {_status(found)}")
    print(f"records: {len(found.records)}, last activity {_last(found)}")
    print("view:")
    for item in found.view:
        span = f"{item.first}" if item.first == item.last else f"{item.first}-{item.last}"
        print(f"  {span:>9}  {item.event.kind:<12} {printable(_summary(item.event))}")
    unknown = found.unknown_calls
    print(f"unknown calls: {len(unknown)}")
    for record in unknown:
        call = record.llm_call
        print(f"  seq {record.seq}: {call.role or '-'} {call.model} ({call.route}) at {record.at}")
    usage = found.usage
    print("usage:")
    rows = [("  ROLE", "CALLS", "INPUT", "OUTPUT", "COST_USD", "UNPRICED", "UNKNOWN")]
    for role, total in [*sorted(usage.by_role.items()), ("(all)", usage.total)]:
        rows.append(
            (
                f"  {role}",
                str(total.calls),
                str(total.input),
                str(total.output),
                _cost(total),
                str(total.unpriced_calls),
                str(total.unknown_calls),
            )
        )
    table(sys.stdout, rows)
    return 0


def _export(args: argparse.Namespace) -> int:
    with _opened(args, args.key) as store:
        lines = store.export_lines()
    out = sys.stdout.buffer
    for line in lines:
        out.write(line + b"\n")
    out.flush()
    return 0


def _import(args: argparse.Namespace) -> int:
    data = sys.stdin.buffer.read() if args.path == "-" else Path(args.path).read_bytes()
    with _opened(args, args.key) as store:
        count = store.import_lines(data.splitlines())
    print(f"imported {count} record(s) into task {args.key}", file=sys.stderr)
    return 0


def store_shown(settings: Settings) -> str:
    """Where ``settings`` keep tasks, for display: a folder, or a URL whose password (if
    any) reads ``(set)``."""
    configured = settings.task_store
    if configured is not None and is_database_url(configured.get_secret_value()):
        return redacted_url(configured)
    return str(task_folder(settings))


def _fingerprint(found: LogRead) -> str:
    header = found.header
    return str(header.header.pin.get("fingerprint", "-")) if header is not None else "-"


def _status(found: LogRead) -> str:
    """One word for where the task stands."""
    if found.header is None:
        return "no-header"
    if found.unknown_calls:
        return "unknown-calls"
    events = [item.event for item in found.view]
    answered = {e.call_id for e in events if isinstance(e, ToolResult)}
    if any(isinstance(e, ToolCall) and e.call_id not in answered for e in events):
        return "tools-pending"
    return "ready"


def _last(found: LogRead) -> str:
    at: datetime | None = found.records[-1].at if found.records else None
    return "-" if at is None else at.strftime("%Y-%m-%dT%H:%M:%SZ")


def _cost(total: UsageTotal) -> str:
    return f"{total.cost_usd:f}" + ("+" if total.unpriced_calls else "")


def _summary(event: object) -> str:
    if isinstance(event, UserText | AssistantText):
        text = event.text
    elif isinstance(event, ToolCall):
        text = f"{event.tool}({event.call_id})"
    elif isinstance(event, ToolResult):
        text = f"{event.call_id}: {event.output if isinstance(event.output, str) else '...'}"
    else:
        text = ""
    text = " ".join(text.split())
    return text if len(text) <= _TEXT_WIDTH else text[: _TEXT_WIDTH - 3] + "..."


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``task list|show|export|import``."""
    task = commands.add_parser("task", help="list, show, export or import tasks")
    actions = task.add_subparsers(dest="action", required=True, metavar="{list,show,export,import}")
    for name, handler, summary in (
        (
            "list",
            _list,
            "every task: key, pin, status, calls, cost, last activity, lease holder ('-' "
            "none, '(unknown)' held without a readable record, '?' the system cannot tell)",
        ),
        ("show", _show, "one task: its view, unknown calls and usage (never takes the lease)"),
        ("export", _export, "one task's records as JSON lines on standard output"),
        ("import", _import, "append exported JSON lines (PATH, or - for stdin) to a new task"),
    ):
        action = actions.add_parser(name, help=summary, description=summary)
        add_config_argument(action)
        action.add_argument(
            "--store",
            metavar="WHERE",
            help="a folder or a postgresql:// URL (default: the task_store setting)",
        )
        if name == "import":
            action.add_argument("--key", required=True, help="the new task's key")
            action.add_argument("path", metavar="PATH", help="the JSON lines, or - for stdin")
        elif name != "list":
            action.add_argument("key", metavar="KEY", help="the task's key")
        action.set_defaults(handler=handler)
