"""``nisse-llm task``: list, show, export, import and repin the tasks of a store, and
approve or deny the tool calls they await approval for.

The store is ``--store`` (a folder or a ``postgresql://`` URL), else ``NISSE_TASK_STORE``,
else the ``task_store`` key of ``--config``'s file: nothing else is read (no token, no
roles). Reading never takes a task's lease; ``import``, ``repin``, ``approve`` and
``deny`` write as the task's one driver (refused while an agent holds the task). An export is the task's records as stored, one JSON line each, so ``task
export K | task import --key K -`` moves a task between stores byte for byte.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import SecretStr

from nisse_llm.cli._settings import add_config_argument
from nisse_llm.cli._terminal import printable, table
from nisse_llm.config.settings import ENV_VARS, Settings, load_task_store
from nisse_llm.errors import ApprovalRefused, ConfigError, LogCorrupt, TaskBusy
from nisse_llm.events.canonical import AssistantText, ToolCall, ToolResult, UserText
from nisse_llm.task.approvals import PendingApproval, awaiting, decision_record
from nisse_llm.task.delegation import children_of, parent_of
from nisse_llm.task.dsn import password_of, redacted_url
from nisse_llm.task.keys import check_task_key
from nisse_llm.task.lease import FileLease
from nisse_llm.task.logstore import LogRead, LogSequenceError, TaskStore
from nisse_llm.task.records import UsageTotal
from nisse_llm.task.repin import default_by, repin_value, repinned
from nisse_llm.task.standing import STATUSES
from nisse_llm.task.standing import status as status_of
from nisse_llm.task.stores import is_database_url, open_task_store, task_folder

__all__ = ["register", "store_shown"]

_TEXT_WIDTH = 72
_EXIT_MISSING = 1  # a task the store lacks: an LLMError's code, said plainly
_EXIT_REFUSED = 2  # an import or repin refused: a usage error, nothing written


class _NoSuchTask(LookupError):
    """The store holds no task of the key asked for."""


@contextmanager
def _opened(args: argparse.Namespace, key: str) -> Iterator[TaskStore]:
    with open_task_store(key, _settings(args)) as store:
        yield store


def _settings(args: argparse.Namespace) -> Settings:
    """Where tasks live, and nothing else: ``--store``, else ``NISSE_TASK_STORE`` or the
    TOML's ``task_store``. A password on the command line is warned about (``ps`` shows
    it to every user of the machine), once per command."""
    found: Settings | None = getattr(args, "store_settings", None)
    if found is not None:
        return found
    if args.store is None:
        found = load_task_store(args.config)
    else:
        if password_of(args.store):
            print(
                "warning: --store carries a password, which every user of this machine can "
                "read in the process list: give a URL without it and set PGPASSWORD or "
                "~/.pgpass, or put the URL in NISSE_TASK_STORE or the TOML's task_store",
                file=sys.stderr,
            )
        schema = os.environ.get(ENV_VARS["task_schema"], "").strip() or "nisse"
        found = Settings.model_construct(task_store=SecretStr(args.store), task_schema=schema)
    args.store_settings = found
    return found


def _read(args: argparse.Namespace, key: str) -> LogRead:
    """Task ``key``'s records; `_NoSuchTask` naming key and store when it has none."""
    settings = _settings(args)
    with open_task_store(key, settings) as store:
        found = store.read()
    if not found.records:
        raise _NoSuchTask(f"no task {key!r} in {store_shown(settings)}")
    return found


def _keys(settings: Settings) -> tuple[list[str], dict[str, str]]:
    """The keys of the store's tasks, in order, and the holder of each held one."""
    configured = settings.task_store.get_secret_value() if settings.task_store else None
    if configured is not None and is_database_url(configured):
        from nisse_llm.task.postgres import task_keys

        found = task_keys(configured, schema=settings.task_schema)
        holders = {row["key"]: f"{row['holder']}" for row in found if row["holder"]}
        return [row["key"] for row in found], holders
    folder = task_folder(settings)
    keys = sorted(path.stem for path in folder.glob("*.jsonl")) if folder.is_dir() else []
    return keys, {key: _file_lease(folder / f"{key}.jsonl") for key in keys}


def _list(args: argparse.Namespace) -> int:
    settings = _settings(args)
    configured = settings.task_store.get_secret_value() if settings.task_store else None
    if configured is not None and is_database_url(configured):
        rows, unreadable = _database_rows(configured, args)
    else:
        rows, unreadable = _file_rows(settings, args)
    header = "KEY PIN STATUS CALLS UNKNOWN COST_USD APPROVALS LAST_ACTIVITY PARENT LEASE"
    print(f"{len(rows)} task(s) in {store_shown(settings)}")
    table(sys.stdout, [tuple(header.split()), *rows])
    if args.limit is not None and len(rows) == args.limit:
        print(f"next page: --after {printable(rows[-1][0])}", file=sys.stderr)
    return 1 if unreadable else 0


def _database_rows(url: str, args: argparse.Namespace) -> tuple[list[tuple[str, ...]], int]:
    """The page of tasks ``args`` asks for, from the tasks table alone (one query: a record
    damaged behind the store's back shows in ``task show``, not here); and how many rows
    are under a key no store accepts (listed ``bad-key``)."""
    from nisse_llm.task.postgres import task_keys

    rows = []
    unreadable = 0
    schema = _settings(args).task_schema
    for row in task_keys(
        url, schema=schema, status=args.status, limit=args.limit, after=args.after
    ):
        try:
            check_task_key(row["key"])
        except ConfigError as exc:
            unreadable += 1
            print(f"warning: {printable(str(exc))}", file=sys.stderr)
            rows.append((printable(row["key"]), "-", "bad-key", *["-"] * 6, row["holder"] or "-"))
            continue
        at: datetime | None = row["last_activity"]
        cost = f"{row['cost_usd']:f}" + ("+" if row["unpriced_calls"] else "")
        shown = (
            row["key"],
            row["pin"] or "-",
            row["status"],
            str(row["calls"]),
            str(row["unknown_calls"]),
            cost,
            str(row["approvals"]),
            "-" if at is None else at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            row["parent"] or "-",
            row["holder"] or "-",
        )
        rows.append(tuple(printable(value) for value in shown))
    return rows, unreadable


def _file_rows(settings: Settings, args: argparse.Namespace) -> tuple[list[tuple[str, ...]], int]:
    """The page of task files ``args`` asks for, each read; and how many were unreadable."""
    keys, holders = _keys(settings)
    rows: list[tuple[str, ...]] = []
    unreadable = 0
    for key in keys:
        if args.after is not None and key <= args.after:
            continue
        if args.limit is not None and len(rows) >= args.limit:
            break
        lease = holders.get(key, "-")
        try:
            with open_task_store(key, settings) as store:
                found_read = store.read()
        except (LogCorrupt, ConfigError) as exc:  # one bad task must not hide the others
            unreadable += 1
            print(f"warning: {printable(str(exc))}", file=sys.stderr)
            status = "corrupt" if isinstance(exc, LogCorrupt) else "bad-key"
            if args.status is None or args.status == status:
                rows.append((printable(key), "-", status, "-", "-", "-", "-", "-", "-", lease))
            continue
        if args.status is not None and _status(found_read) != args.status:
            continue
        total = found_read.usage.total
        rows.append(
            (
                key,
                _fingerprint(found_read),
                _status(found_read),
                str(total.calls),
                str(total.unknown_calls),
                _cost(total),
                str(len(_awaiting(found_read))),
                _last(found_read),
                _parent(found_read),
                lease,
            )
        )
    return rows, unreadable


def _parent(found: LogRead) -> str:
    """The key of the task that delegated this one (``-``: none)."""
    parent = parent_of(found.records)
    return "-" if parent is None else printable(parent.key)


def _print_tree(args: argparse.Namespace, key: str, found: LogRead) -> None:
    """The task's parent, its sub-tasks (each with its status and cost, theirs below them)
    and the usage of the whole tree."""
    parent = parent_of(found.records)
    print(f"parent: {'-' if parent is None else printable(parent.key)}")
    print("sub-tasks:")
    total = _subtree(args, key, found, 1)
    print(f"tree usage: {total.calls} call(s), {_cost(total)} USD, {total.unknown_calls} unknown")


def _subtree(args: argparse.Namespace, key: str, found: LogRead, depth: int) -> UsageTotal:
    total = found.usage.total
    for child in children_of(found.records):
        below = _read(args, child)
        mine = below.usage.total
        print(f"{'  ' * depth}{printable(child)}: {_status(below)}, {_cost(mine)} USD")
        total = total + _subtree(args, child, below, depth + 1)
    return total


def _awaiting(found: LogRead) -> list[PendingApproval]:
    """The task's tool calls awaiting approval."""
    return awaiting((r.event for r in found.events), found.records)


def _pending(args: argparse.Namespace) -> int:
    keys = [args.key] if args.key is not None else _keys(_settings(args))[0]
    rows: list[tuple[str, ...]] = [("KEY", "CALL_ID", "TOOL", "SINCE", "ARGUMENTS")]
    for key in keys:
        found = _read(args, key)
        for call in _awaiting(found):
            since = "-" if call.at is None else call.at.strftime("%Y-%m-%dT%H:%M:%SZ")
            arguments = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)
            if len(arguments) > _TEXT_WIDTH:
                arguments = arguments[: _TEXT_WIDTH - 3] + "..."
            shown = (key, call.call_id, call.tool, since, arguments)
            rows.append(tuple(printable(value) for value in shown))
    print(f"{len(rows) - 1} call(s) await approval")
    table(sys.stdout, rows)
    return 0


def _approve(args: argparse.Namespace) -> int:
    return _decide(args, "approved", None)


def _deny(args: argparse.Namespace) -> int:
    return _decide(args, "denied", args.reason)


def _decide(
    args: argparse.Namespace, outcome: Literal["approved", "denied"], reason: str | None
) -> int:
    _read(args, args.key)
    with _opened(args, args.key) as store:
        lease = store.lease()
        try:
            record = decision_record(
                store.read().records,
                args.call_id,
                outcome,
                by=args.by or default_by(),
                reason=reason,
            )
            stored = store.append_approval(record)
        except ApprovalRefused as exc:
            print(f"error: {printable(str(exc))}", file=sys.stderr)
            return _EXIT_REFUSED
        finally:
            if lease is not None:
                lease.close()
    print(
        f"task {args.key}: call {printable(args.call_id)} ({printable(record.tool)}) "
        f"{outcome} at seq {stored.seq} by {printable(record.by or '-')}; the task's next run "
        + ("runs it" if outcome == "approved" else "answers it with the reason")
    )
    return 0


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
    found = _read(args, args.key)
    print(f"task {args.key}: pin {_fingerprint(found)}, {_status(found)}")
    print(f"records: {len(found.records)}, last activity {_last(found)}")
    _print_repins(found)
    print("view:")
    for item in found.view:
        span = f"{item.first}" if item.first == item.last else f"{item.first}-{item.last}"
        print(f"  {span:>9}  {item.event.kind:<12} {printable(_summary(item.event))}")
    unknown = found.unknown_calls
    print(f"unknown calls: {len(unknown)}")
    for record in unknown:
        call = record.llm_call
        print(f"  seq {record.seq}: {call.role or '-'} {call.model} ({call.route}) at {record.at}")
    _print_tree(args, args.key, found)
    waiting = _awaiting(found)
    print(f"awaiting approval: {len(waiting)}")
    for one in waiting:
        print(f"  {printable(one.call_id)}: {printable(one.tool)}")
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


def _print_repins(found: LogRead) -> None:
    """Each repin: when, by whom, and each key it changed, from what to what."""
    repins = found.repins
    print(f"repins: {len(repins)}")
    header = found.header
    before = header.header.pin if header is not None else {}
    for record in repins:
        after = record.repin.pin
        moves = ", ".join(
            f"{key} {repin_value(before, key)} -> {repin_value(after, key)}"
            for key in record.repin.changed
        )
        at = record.at.strftime("%Y-%m-%dT%H:%M:%SZ")
        print(f"  seq {record.seq} at {at} by {printable(record.repin.by)}: {printable(moves)}")
        before = after


def _export(args: argparse.Namespace) -> int:
    _read(args, args.key)
    with _opened(args, args.key) as store:
        lines = store.export_lines()
    out = sys.stdout.buffer
    for line in lines:
        out.write(line + b"\n")
    out.flush()
    return 0


def _import(args: argparse.Namespace) -> int:
    data = sys.stdin.buffer.read() if args.path == "-" else Path(args.path).read_bytes()
    try:
        with _opened(args, args.key) as store:
            count = store.import_lines(data.splitlines(), replace=args.replace)
    except (LogSequenceError, LogCorrupt) as exc:
        source = "standard input" if args.path == "-" else args.path
        print(f"error: import of {source} refused: {printable(str(exc))}", file=sys.stderr)
        return _EXIT_REFUSED
    replaced = " (replacing the task it held)" if args.replace else ""
    print(f"imported {count} record(s) into task {args.key}{replaced}", file=sys.stderr)
    return 0


def _repin(args: argparse.Namespace) -> int:
    if not args.role and args.base_url is None:
        print("error: task repin needs --role ROLE=MODEL or --base-url URL", file=sys.stderr)
        return _EXIT_REFUSED
    roles: dict[str, str] = {}
    for given in args.role:
        role, eq, model = given.partition("=")
        if not eq or not role.strip() or not model.strip():
            print(f"error: --role {given!r}: write ROLE=MODEL", file=sys.stderr)
            return _EXIT_REFUSED
        roles[role.strip()] = model.strip()
    _read(args, args.key)
    with _opened(args, args.key) as store:
        lease = store.lease()
        try:
            found = store.read()  # under the lease: no driver runs the task meanwhile
            record = repinned(
                found.pin or {}, roles=roles, base_url=args.base_url, by=args.by or default_by()
            )
            stored = store.append_repin(record)
        finally:
            if lease is not None:
                lease.close()
    moves = ", ".join(f"{k} -> {repin_value(record.pin, k)}" for k in record.changed)
    print(f"task {args.key}: repinned at seq {stored.seq} by {printable(record.by)}: {moves}")
    print(f"pin in force from the next opening: {record.pin['fingerprint']}")
    return 0


def _prune(args: argparse.Namespace) -> int:
    """Export, then delete, each finished task last active before ``--finished-before``;
    an unfinished or open task is kept and named (exit 1 when any was kept)."""
    try:
        before = datetime.fromisoformat(args.finished_before)
    except ValueError:
        print(f"error: --finished-before {args.finished_before!r} is no date", file=sys.stderr)
        return _EXIT_REFUSED
    before = before if before.tzinfo is not None else before.replace(tzinfo=UTC)
    archive = None if args.archive is None else Path(args.archive)
    settings = _settings(args)
    pruned = kept = 0
    for key in _keys(settings)[0]:
        with open_task_store(key, settings) as store:
            found = store.read()
            if not found.records or found.records[-1].at >= before:
                continue
            try:
                lease = store.lease()
            except TaskBusy as exc:
                print(f"kept {key}: open ({printable(str(exc))})", file=sys.stderr)
                kept += 1
                continue
            try:
                found = store.read()  # under the lease: no driver writes meanwhile
                if _status(found) != "done":
                    print(f"kept {key}: unfinished ({_status(found)})", file=sys.stderr)
                    kept += 1
                    continue
                if archive is not None:
                    _archived(archive / f"{key}.jsonl", store.export_lines())
                count = store.delete()
            finally:
                if lease is not None:
                    lease.close()
        pruned += 1
        where = "" if archive is None else f", archived in {archive / f'{key}.jsonl'}"
        print(f"pruned {key}: {count} records{where}")
    print(f"{pruned} task(s) pruned, {kept} kept, in {store_shown(settings)}")
    return 1 if kept else 0


def _archived(path: Path, lines: list[bytes]) -> None:
    """Write a task's export to ``path`` (not one already there), durably, before the
    task is deleted."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("xb") as file:
        file.write(b"".join(line + b"\n" for line in lines))
        file.flush()
        os.fsync(file.fileno())


def _migrate(args: argparse.Namespace) -> int:
    """Create or upgrade the task tables of a database store, saying each step done."""
    settings = _settings(args)
    configured = settings.task_store
    if configured is None or not is_database_url(configured.get_secret_value()):
        print(f"{store_shown(settings)}: task files need no migration")
        return 0
    from nisse_llm.task._pg import SCHEMA_VERSION
    from nisse_llm.task.postgres import migrate_database

    schema = args.schema or settings.task_schema
    done = migrate_database(configured, schema=schema)
    for step in done:
        print(f"{store_shown(settings)}: {step}")
    if not done:
        print(
            f"{store_shown(settings)}: the task tables in schema {schema} are up to date "
            f"(version {SCHEMA_VERSION}); nothing done"
        )
    return 0


def _reporting(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """``handler``, a task the store lacks said plainly (exit 1)."""

    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except _NoSuchTask as exc:
            print(f"error: {printable(str(exc))}", file=sys.stderr)
            return _EXIT_MISSING

    return run


def store_shown(settings: Settings) -> str:
    """Where ``settings`` keep tasks, for display: a folder, or a URL whose password (if
    any) reads ``(set)``."""
    configured = settings.task_store
    if configured is not None and is_database_url(configured.get_secret_value()):
        return redacted_url(configured)
    return str(task_folder(settings))


def _fingerprint(found: LogRead) -> str:
    """The fingerprint of the pin in force (the last repin's, else the header's)."""
    pin = found.pin
    return str(pin.get("fingerprint", "-")) if pin is not None else "-"


def _status(found: LogRead) -> str:
    """One word for where the task stands (`nisse_llm.task.standing.status`)."""
    return status_of(found)


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
    """Add ``task list|show|export|import|repin|pending|approve|deny|prune|migrate``."""
    task = commands.add_parser(
        "task",
        help="list, show, export, import, repin or prune tasks; approve or deny tool calls; "
        "migrate their tables",
    )
    actions = task.add_subparsers(
        dest="action",
        required=True,
        metavar="{list,show,export,import,repin,pending,approve,deny,prune,migrate}",
    )
    for name, handler, summary in (
        (
            "list",
            _list,
            "every task, sub-tasks after their parent: key, pin, status, calls, unknown calls, "
            "cost, calls awaiting approval, last activity, parent, lease holder ('-' none, "
            "'(unknown)' held without a readable record, '?' the system cannot tell)",
        ),
        (
            "show",
            _show,
            "one task: its repins, parent and sub-tasks, view, unknown calls and usage (never "
            "takes the lease)",
        ),
        ("export", _export, "one task's records as JSON lines on standard output"),
        ("import", _import, "write an export (PATH, or - for stdin) as a new task"),
        (
            "repin",
            _repin,
            "move a task to other models (--role ROLE=MODEL) or another proxy (--base-url "
            "URL) from its next opening: a record says what changed, when and by whom",
        ),
        (
            "pending",
            _pending,
            "the tool calls awaiting approval: of task KEY, or of every task",
        ),
        (
            "approve",
            _approve,
            "approve a call awaiting approval: the task's next run runs it (a record says "
            "who and when)",
        ),
        (
            "deny",
            _deny,
            "deny a call awaiting approval: the task's next run answers it with the reason",
        ),
        (
            "prune",
            _prune,
            "export (with --archive) then delete each finished task last active before "
            "--finished-before DATE; an unfinished or open task is kept and named",
        ),
        (
            "migrate",
            _migrate,
            "create or upgrade a database store's task tables (run once per release, by a "
            "role that may create them), saying what it did",
        ),
    ):
        action = actions.add_parser(name, help=summary, description=summary)
        add_config_argument(action)
        action.add_argument(
            "--store",
            metavar="WHERE",
            help="a folder or a postgresql:// URL without its password (default: "
            "NISSE_TASK_STORE, else the TOML's task_store; the password from PGPASSWORD or "
            "~/.pgpass)",
        )
        if name == "import":
            action.add_argument("--key", required=True, help="the new task's key")
            action.add_argument(
                "--replace", action="store_true", help="replace the task if the key holds one"
            )
            action.add_argument("path", metavar="PATH", help="the JSON lines, or - for stdin")
        elif name == "pending":
            action.add_argument("key", metavar="KEY", nargs="?", help="the task's key")
        elif name == "prune":
            action.add_argument(
                "--finished-before",
                required=True,
                metavar="DATE",
                help="ISO date or time (UTC unless it names a zone)",
            )
            action.add_argument(
                "--archive", metavar="DIR", help="write each task's export here, KEY.jsonl"
            )
        elif name == "migrate":
            action.add_argument(
                "--schema",
                metavar="NAME",
                help="the tables' schema (default: NISSE_TASK_SCHEMA, else the TOML's "
                "task_schema, else nisse)",
            )
        elif name == "list":
            action.add_argument(
                "--status",
                choices=(*STATUSES, "corrupt", "bad-key"),
                help="only the tasks of this status",
            )
            action.add_argument(
                "--limit", type=int, metavar="N", help="at most N tasks (a page; see --after)"
            )
            action.add_argument(
                "--after",
                metavar="KEY",
                help="only the tasks whose key sorts after KEY (the next page: the last key "
                "of the one before)",
            )
        else:
            action.add_argument("key", metavar="KEY", help="the task's key")
        if name in ("approve", "deny"):
            action.add_argument("call_id", metavar="CALL_ID", help="the call's id")
            action.add_argument("--by", metavar="NAME", help="who decides (default: user@host)")
        if name == "deny":
            action.add_argument("--reason", required=True, help="why: the model reads it")
        if name == "repin":
            action.add_argument(
                "--role",
                action="append",
                default=[],
                metavar="ROLE=MODEL",
                help="the role's new model, on the route the rules give it (repeatable)",
            )
            action.add_argument("--base-url", metavar="URL", help="the task's new proxy URL")
            action.add_argument("--by", metavar="NAME", help="who repins (default: user@host)")
        action.set_defaults(handler=_reporting(handler))
