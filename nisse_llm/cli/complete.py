"""The ``nisse-llm complete`` subcommand: one prompt to a role's pinned model, the reply printed.

Request options (``--reasoning``, ``--max-output-tokens``, ``--tool-choice``,
``--temperature``) are validated as `RequestOptions` fields and override the role's profile.
The reply goes to stdout (text, then one line per tool call; or the canonical events as
JSON lines with ``--json``), usage to stderr. With ``--stream`` the text is printed as it
arrives, the tool calls once the reply is whole. Errors propagate to the CLI's exit-code
mapping: 1 a failed call, 2 configuration or usage, 3 upstream unavailable, 4 budget,
5 context window exceeded.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, assert_never

from pydantic import TypeAdapter, ValidationError

from nisse_llm.cli._settings import load_for
from nisse_llm.cli._terminal import printable
from nisse_llm.config.options import RequestOptions
from nisse_llm.events.canonical import (
    AssistantText,
    CanonicalEvent,
    Compaction,
    Completion,
    Reasoning,
    ToolCall,
    ToolResult,
    UserImage,
    UserText,
)

if TYPE_CHECKING:
    from nisse_llm.transport.routers import RoleRouter

__all__ = ["register"]

_EVENT = TypeAdapter[CanonicalEvent](CanonicalEvent)


def _level_or_budget(text: str) -> int | str:
    """A ``--reasoning`` value: a budget in tokens when it is a number, else a level."""
    return int(text) if text.isdecimal() else text


#: The `RequestOptions` fields the command takes as flags (``--max-output-tokens`` for
#: ``max_output_tokens``): field, metavar, how the text is parsed, help.
_REQUEST_OPTIONS: tuple[tuple[str, str, Callable[[str], object], str], ...] = (
    (
        "reasoning",
        "LEVEL",
        _level_or_budget,
        "off, minimal, low, medium, high, xhigh, max (as the model offers them), or a "
        "thinking budget in tokens",
    ),
    ("max_output_tokens", "N", int, "output ceiling for the reply, in tokens"),
    ("tool_choice", "CHOICE", str, "auto, none, required, or a tool name"),
    ("temperature", "T", float, "sampling temperature, 0 to 2 (OpenAI-family models only)"),
)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``complete`` to the CLI's subcommands."""
    summary = "send one prompt to a role's model through the proxy and print the reply"
    parser = commands.add_parser("complete", help=summary, description=summary)
    parser.add_argument(
        "--role",
        required=True,
        help="the role to ask (a seed role, or one the configuration adds); only this role "
        "must be configured",
    )
    parser.add_argument(
        "--config", metavar="PATH", help="TOML file (default: $NISSE_CONFIG, else none)"
    )
    parser.add_argument("--system", metavar="TEXT", help="a system prompt")
    output = parser.add_mutually_exclusive_group()
    output.add_argument(
        "--json", action="store_true", help="print the reply's canonical events as JSON lines"
    )
    output.add_argument(
        "--stream", action="store_true", help="print the reply's text as it arrives"
    )
    options = parser.add_argument_group("request options (override the role's profile)")
    for name, metavar, parse, help_text in _REQUEST_OPTIONS:
        options.add_argument(
            "--" + name.replace("_", "-"),
            metavar=metavar,
            type=_option(name, parse),
            help=help_text,
        )
    parser.add_argument(
        "--image",
        metavar="PATH",
        action="append",
        default=[],
        help="an image (PNG, JPEG, GIF or WebP) sent before the prompt; repeatable",
    )
    parser.add_argument("prompt", metavar="PROMPT", help="the user message")
    parser.set_defaults(handler=_complete)


def _option(name: str, parse: Callable[[str], object]) -> Callable[[str], object]:
    """An argparse type: the text parsed and validated as the `RequestOptions` field ``name``."""

    def convert(text: str) -> object:
        try:
            value = parse(text)
            RequestOptions.model_validate({name: value})
        except (ValueError, ValidationError) as exc:
            errors = exc.errors(include_url=False) if isinstance(exc, ValidationError) else ()
            reason = errors[0]["msg"] if errors else str(exc)
            raise argparse.ArgumentTypeError(f"invalid value {text!r}: {reason}") from None
        return value

    return convert


def _request_options(args: argparse.Namespace) -> RequestOptions | None:
    given = {
        name: getattr(args, name)
        for name, *_ in _REQUEST_OPTIONS
        if getattr(args, name) is not None
    }
    return RequestOptions.model_validate(given) if given else None


def _complete(args: argparse.Namespace) -> int:
    # Deferred: the CLI imports this module to register it, and `config check` should not
    # pay for httpx and the renderers.
    from nisse_llm.transport.routers import RoleRouter

    pin = load_for(args, require_roles=(args.role,)).pin()
    options = _request_options(args)
    with RoleRouter.from_pin(pin) as router:
        if args.stream:
            events, completion = _stream(router, args, options)
        else:
            completion = router.completion(
                args.role, _prompt(args), None, args.system, options=options
            )
            events = completion.events
    usage, call = completion.usage, completion.call
    for event in events:
        if args.json:
            sys.stdout.write(_EVENT.dump_json(event).decode() + "\n")
        else:
            _print_event(event)
    if usage is not None:
        print(
            f"usage: model={pin.model_for(args.role)} input={usage.input} output={usage.output} "
            f"cache_read={usage.cache_read} cache_write={usage.cache_write}"
            + ("" if call is None or call.cost_usd is None else f" cost_usd={call.cost_usd}")
            + ("" if call is None or call.call_id is None else f" call_id={call.call_id}"),
            file=sys.stderr,
        )
    return 0


def _prompt(args: argparse.Namespace) -> list[CanonicalEvent]:
    """The user turn: each ``--image`` in order (images before the text they go with), then
    the prompt. A file that is not a whole PNG/JPEG/GIF/WebP is an `ImageError`."""
    from nisse_llm.events.images import Image

    images: list[CanonicalEvent] = [UserImage(image=Image.from_path(p)) for p in args.image]
    return [*images, UserText(text=args.prompt)]


def _stream(
    router: RoleRouter, args: argparse.Namespace, options: RequestOptions | None
) -> tuple[list[CanonicalEvent], Completion]:
    """Print text deltas as they arrive; return the events still to print (not the text)
    and the call's completion."""
    from nisse_llm.stream.deltas import TextDelta

    out = sys.stdout
    printed = False
    with router.stream(args.role, _prompt(args), None, args.system, options=options) as stream:
        try:
            for delta in stream:
                if isinstance(delta, TextDelta):
                    if printed and delta.text_so_far == delta.text:
                        out.write("\n")  # a new text block starts
                    out.write(printable(delta.text))
                    out.flush()
                    printed = True
        finally:
            if printed:
                out.write("\n")
                out.flush()
    completion = stream.completion
    if not printed:
        return completion.events, completion  # a server that ignored "stream" sent it whole
    return [e for e in completion.events if not isinstance(e, AssistantText)], completion


def _print_event(event: CanonicalEvent) -> None:
    if isinstance(event, AssistantText):
        print(printable(event.text))
    elif isinstance(event, ToolCall):
        arguments = json.dumps(event.arguments, ensure_ascii=False)
        print(f"tool call {event.tool} {printable(arguments)}")
    elif isinstance(event, Reasoning):
        kind = str(event.block.get("type", "unknown"))[:80]
        print(f"[reasoning block: {printable(kind)}]", file=sys.stderr)
    elif isinstance(event, UserText | UserImage | ToolResult | Compaction):
        # A reply never holds these; shown rather than dropped if a parser ever yields one.
        print(printable(f"[{event.kind}] {event}"), file=sys.stderr)
    else:
        assert_never(event)
