"""The ``nisse-llm`` command: check and show the configuration, export the JSON Schemas.

Each subcommand is a registrar adding a subparser whose handler takes the parsed
arguments and returns an exit code; `exit_code` maps errors to codes for all of them.
User mistakes print plain words on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence

from nisse_llm.cli._settings import add_config_argument, load_for
from nisse_llm.cli._terminal import printable, table
from nisse_llm.cli.complete import register as _register_complete
from nisse_llm.cli.mcp import mcp_online_rows, mcp_rows
from nisse_llm.cli.schema import check_schemas, write_schemas
from nisse_llm.cli.starter import DEFAULT_CONFIG_NAME, init_config
from nisse_llm.cli.task import register as _register_task
from nisse_llm.cli.task import store_shown
from nisse_llm.config.options import RequestOptions
from nisse_llm.config.settings import SEED_ROLES, Pin, Settings
from nisse_llm.errors import (
    AuthenticationFailed,
    BudgetExhausted,
    ConfigError,
    ContextWindowExceeded,
    LLMError,
    LogCorrupt,
    ModelNotServed,
    TaskStoreMisconfigured,
    UpstreamUnavailable,
)

__all__ = [
    "EXIT_BUDGET",
    "EXIT_CONTEXT",
    "EXIT_ERROR",
    "EXIT_OK",
    "EXIT_UPSTREAM",
    "EXIT_USAGE",
    "REGISTRARS",
    "build_parser",
    "exit_code",
    "main",
]

EXIT_OK = 0
EXIT_ERROR = 1  # any other LLMError, or stale schema files under --check
EXIT_USAGE = 2  # a configuration or usage error (ModelNotServed, AuthenticationFailed,
# TaskStoreMisconfigured)
EXIT_UPSTREAM = 3  # UpstreamUnavailable: keep the work, resume later
EXIT_BUDGET = 4  # BudgetExhausted: keep the work, tell the operator
EXIT_CONTEXT = 5  # ContextWindowExceeded: keep the work, shorten the log, call again

Handler = Callable[[argparse.Namespace], int]
Registrar = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]


def exit_code(exc: LLMError) -> int:
    """The exit code for an error that ends a command."""
    if isinstance(exc, BudgetExhausted):
        return EXIT_BUDGET
    if isinstance(exc, UpstreamUnavailable):
        return EXIT_UPSTREAM
    if isinstance(
        exc, ConfigError | ModelNotServed | AuthenticationFailed | TaskStoreMisconfigured
    ):
        return EXIT_USAGE
    if isinstance(exc, ContextWindowExceeded):
        return EXIT_CONTEXT
    return EXIT_ERROR


def _config_check(args: argparse.Namespace) -> int:
    settings = load_for(args)
    pin = settings.pin()
    sources = settings.sources
    source = settings.config_lookup
    if settings.config_file is None:
        source = f"environment only ({source})"
    print(f"configuration OK: {source}")
    print(f"proxy: {pin.base_url}")
    rows: list[tuple[str, ...]] = [
        (role, model, pin.route(role), sources.get(f"roles.{role}", "default"))
        for role, model in pin.roles.pinned().items()
    ]
    profiles = [_options_cell(pin.options_for(role)) for role in pin.roles.names]
    if any(profiles):  # the options column appears once a role has a profile
        header: tuple[str, ...] = ("role", "model", "route", "source", "options")
        rows = [(*row, cell) for row, cell in zip(rows, profiles, strict=True)]
    else:
        header = ("role", "model", "route", "source")
    table(sys.stdout, [header, *rows])
    print("settings:")
    table(sys.stdout, [("  key", "value", "source"), *_setting_rows(settings)])
    _print_mcp(settings)
    if args.online:
        proxy = _online(pin)
        servers = _mcp_online(settings)  # checked whatever the proxy said
        return proxy or servers
    return EXIT_OK


def _print_mcp(settings: Settings) -> None:
    if settings.mcp.servers:
        print("mcp servers:")
        table(sys.stdout, [("  key", "value", "source"), *mcp_rows(settings)])


def _mcp_online(settings: Settings) -> int:
    """Each MCP server started, initialized and asked for its tools."""
    if not settings.mcp.servers:
        return EXIT_OK
    print("mcp: starting each server and listing its tools")
    rows, ok = mcp_online_rows(settings)
    table(sys.stdout, rows)
    return EXIT_OK if ok else EXIT_UPSTREAM


def _online(pin: Pin) -> int:
    """The live check: one line per role with its verdict; the exit code says what failed."""
    from nisse_llm.transport.online import check_online

    print(f"online: asking {pin.base_url} (no tokens spent)")
    report = check_online(pin)
    if not report.reachable:
        print(f"proxy: unreachable: {printable(str(report.error))}")
        return EXIT_UPSTREAM
    if not report.token_accepted:
        print(f"token: refused by the proxy: {printable(str(report.error))}")
        return EXIT_USAGE
    print("proxy: answered; token: accepted")
    rows = [("role", "model", "route", "ceiling", "served", "verdict")]
    rows += [
        (
            check.role,
            check.model,
            check.route,
            str(check.ceiling),
            "yes" if check.served else "no",
            check.verdict + "".join(f"; {note}" for note in check.notes),
        )
        for check in report.roles
    ]
    table(sys.stdout, rows)
    return EXIT_OK if report.ok else EXIT_USAGE


def _options_cell(options: RequestOptions | Mapping[str, object] | None) -> str:
    """A role's options as ``key=value`` pairs (JSON values), empty when it sets none."""
    if options is None:
        return ""
    fields = (
        options.model_dump(mode="json", exclude_none=True)
        if isinstance(options, RequestOptions)
        else options
    )
    return " ".join(f"{key}={json.dumps(value)}" for key, value in fields.items())


def _setting_rows(settings: Settings) -> list[tuple[str, str, str]]:
    """Every key but the roles' models (in the role table): value and source; the token
    only says whether it is set."""
    values = settings.model_dump(mode="json")
    rows = []
    for key, source in settings.sources.items():
        table, *path = key.split(".")
        if (table == "roles" and len(path) == 1) or table == "mcp":  # mcp: its own table
            continue
        if key == "llm.token":
            shown = "(set, never shown)"
        elif key == "task_store":
            shown = store_shown(settings)
        else:
            node = values.get(table)
            for part in path:
                node = node.get(part) if isinstance(node, dict) else None
            shown = _shown(node)
        rows.append((f"  {key}", shown, source))
    return rows


def _shown(value: object) -> str:
    if isinstance(value, list):
        return ", ".join(str(item) for item in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return "(none)" if value is None else str(value)


def _config_show(args: argparse.Namespace) -> int:
    settings = load_for(args)
    record = settings.pin().record()
    sources = settings.sources
    if args.json:
        print(json.dumps({"record": record, "sources": sources}, indent=2, sort_keys=True))
        return EXIT_OK
    for key, value in record.items():
        if key == "roles":
            continue
        origin = sources.get(f"llm.{key}")
        print(f"{key}: {_shown(value)}" + (f"  ({origin})" if origin else ""))
    print(f"task_store: {store_shown(settings)}  ({sources.get('task_store', 'default')})")
    print("roles:")
    table(
        sys.stdout,
        [
            (
                f"  {role}",
                entry["model"],
                entry["route"],
                sources.get(f"roles.{role}", "default"),
                _options_cell(entry.get("options")),
            )
            for role, entry in record["roles"].items()
        ],
    )
    _print_mcp(settings)
    return EXIT_OK


def _role_list(text: str) -> tuple[str, ...]:
    """``--require planner,executor`` as role names (argparse reports a bad one)."""
    from nisse_llm.config.settings import role_name_problem

    names = tuple(part.strip() for part in text.split(",") if part.strip())
    for name in names:
        problem = role_name_problem(name)
        if problem is not None:
            raise argparse.ArgumentTypeError(f"{name!r} is not a role name: {problem}")
    return names


def _config_init(args: argparse.Namespace) -> int:
    for path in init_config(args.path, force=args.force):
        print(f"wrote {path}")
    return EXIT_OK


def _register_config(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    config = commands.add_parser("config", help="check, show or start a configuration")
    actions = config.add_subparsers(dest="action", required=True, metavar="{check,show,init}")
    for name, handler, summary in (
        (
            "check",
            _config_check,
            "validate; print each role's model and route, and every value's source",
        ),
        (
            "show",
            _config_show,
            "print the pinned record and where each value came from (never the token)",
        ),
    ):
        action = actions.add_parser(name, help=summary, description=summary)
        add_config_argument(action)
        action.add_argument(
            "--require",
            metavar="ROLES",
            type=_role_list,
            help="comma-separated roles the agent uses, each required (default: the "
            f"configuration's require_roles, else {','.join(SEED_ROLES)}); any other role "
            "configured is kept",
        )
        if name == "check":
            action.add_argument(
                "--online",
                action="store_true",
                help="also ask the proxy (no tokens spent): is it up, is the token accepted, "
                "is each role's model served, does its ceiling fit, is reasoning supported",
            )
        if name == "show":
            action.add_argument(
                "--json",
                action="store_true",
                help='print {"record": the pin record, "sources": key -> source} as JSON',
            )
        action.set_defaults(handler=handler)
    summary = "write a commented starter TOML and its JSON Schema beside it"
    init = actions.add_parser("init", help=summary, description=summary)
    init.add_argument(
        "path",
        nargs="?",
        default=DEFAULT_CONFIG_NAME,
        help=f"the TOML to write, or a folder for {DEFAULT_CONFIG_NAME} (default: ./{DEFAULT_CONFIG_NAME})",
    )
    init.add_argument("--force", action="store_true", help="replace an existing TOML")
    init.set_defaults(handler=_config_init)


def _schema(args: argparse.Namespace) -> int:
    if args.check:
        found = check_schemas(args.dir)
        if found.current:
            print(f"schemas in {args.dir} are current")
            return EXIT_OK
        print(f"looked in {found.folder}", file=sys.stderr)
        for label, names in (
            ("missing", found.missing),
            ("stale", found.stale),
            ("no longer generated", found.extra),
        ):
            for name in names:
                print(f"{label}: {args.dir}/{name}", file=sys.stderr)
        print(f"run `nisse-llm schema --dir {args.dir}` to regenerate", file=sys.stderr)
        return EXIT_ERROR
    changed = write_schemas(args.dir)
    for name in changed:
        print(f"wrote {args.dir}/{name}")
    if not changed:
        print(f"schemas in {args.dir} are current")
    return EXIT_OK


def _register_schema(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    summary = "write the JSON Schema files, or check that they are current"
    schema = commands.add_parser("schema", help=summary, description=summary)
    schema.add_argument("--check", action="store_true", help="exit 1 when a file is stale")
    schema.add_argument(
        "--dir",
        default="schemas",
        help="schema folder (default: schemas); the files are rendered from the installed "
        "package, so any folder works without a repository checkout",
    )
    schema.set_defaults(handler=_schema)


#: One registrar per subcommand; a new subcommand appends its own.
REGISTRARS: list[Registrar] = [
    _register_config,
    _register_schema,
    _register_complete,
    _register_task,
]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="nisse-llm", description="LLM access for coding agents through one LiteLLM proxy."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in REGISTRARS:
        register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code (see `exit_code`)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on --help (0) and on usage errors (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    handler: Handler = args.handler
    try:
        code = handler(args)
        sys.stdout.flush()  # a closed pipe is met here, not at the interpreter's exit
        return code
    except LLMError as exc:
        print(f"error: {printable(str(exc))}", file=sys.stderr)  # may quote a server's body
        return exit_code(exc)
    except LogCorrupt as exc:  # a task's record damaged: said, with its place, not a traceback
        print(f"error: {printable(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:  # the reader left (`task show | head`): nothing more to say
        _silence_stdout()
        return EXIT_OK
    except OSError as exc:  # e.g. an unwritable schema folder
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR


def _silence_stdout() -> None:
    """Point standard output at the null device, so the interpreter's last flush of what
    the closed pipe did not take cannot fail again at exit."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, sys.stdout.fileno())
    except (OSError, ValueError):  # no real descriptor (a test's captured stream)
        pass
    finally:
        os.close(null)


if __name__ == "__main__":
    raise SystemExit(main())
