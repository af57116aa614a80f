"""``python -m bench.images [--screens 20] [--size 500000] [--calls 15]``: carrying screenshots.

A task log grows to hold ``--screens`` screenshots of ``--size`` bytes each (noisy PNGs,
which do not compress), alternately pasted by the user and returned by a tool, with
text turns around them. After each screenshot the agent makes ``--calls`` more calls,
each re-sending the log grown by one exchange of text. Reported per route, for what the
clients send (`render_parts`) and for one joined body (`render_bytes`, which copies
every byte of the body, so it grows with the images by nature):

- the median client CPU of one such call after 1, 5, 10, ... screenshots, beside the
  same for a twin log without the images (each image replaced by a short text): equal
  means the images already sent cost nothing per call, whatever their number and size;
- how many times an image was encoded (should equal the screenshots, per route);
- a cold render of the full log (every event encoded afresh) for scale.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from nisse_llm import PromptCache
from nisse_llm.events.canonical import AssistantText, StoredEvent, ToolCall, ToolResult, UserText
from nisse_llm.events.canonical import UserImage as UserImageEvent
from nisse_llm.events.images import Image
from nisse_llm.render import _images
from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
from nisse_llm.render.openai_chat import OpenAIChatRenderer
from nisse_llm.testing.images import screenshot

MODEL = "claude-sonnet-4-5"
ROUTES: dict[str, Any] = {"chat": OpenAIChatRenderer(), "messages": AnthropicMessagesRenderer()}


def _counting() -> dict[str, int]:
    counts = {"messages": 0, "chat": 0}
    originals = {"messages": _images._anthropic_json, "chat": _images._chat_json}

    def wrap(route: str) -> Callable[[Image], bytes]:
        inner = originals[route]

        def encode(image: Image) -> bytes:
            counts[route] += 1
            return inner(image)

        return encode

    _images._anthropic_json = wrap("messages")  # type: ignore[assignment]
    _images._chat_json = wrap("chat")  # type: ignore[assignment]
    return counts


def run(screens: int, size: int, calls: int, *, images: bool = True) -> dict[str, Any]:
    """The measurements as a dict (see the module docstring); the twin without ``images``."""
    for renderer in ROUTES.values():
        renderer.forget()
    counts = _counting()
    shots = [Image.from_bytes(screenshot(size, seed=n)) for n in range(screens)]
    log: list[StoredEvent] = []
    cache = PromptCache()

    def add(event: Any) -> None:
        log.append(StoredEvent.now(len(log), event))

    per_call: dict[str, dict[int, float]] = {
        f"{r}-{k}": {} for r in ROUTES for k in ("parts", "bytes")
    }
    sizes: dict[str, int] = {}
    for number, shot in enumerate(shots, 1):
        add(UserText(text=f"Screenshot {number}: what changed?"))
        if number % 2:
            add(UserImageEvent(image=shot) if images else UserText(text="(a screenshot)"))
            add(AssistantText(text="Looking.", model=MODEL))
        else:
            call = ToolCall(call_id=f"shot_{number}", tool="screenshot", arguments={"n": number})
            add(call)
            add(ToolResult(call_id=call.call_id, output="captured", images=(shot,) * images))
        samples: dict[str, list[float]] = {key: [] for key in per_call}
        for turn in range(calls):
            add(UserText(text=f"Follow-up {turn} on screenshot {number}."))
            add(AssistantText(text="Noted; nothing else changed.", model=MODEL))
            for route, renderer in ROUTES.items():
                start = time.process_time()
                parts = renderer.render_parts(log, None, MODEL, "Be brief.", cache=cache)
                samples[f"{route}-parts"].append(time.process_time() - start)
                sizes[route] = sum(map(len, parts))
                del parts
        # Joining the whole body is timed apart: a 10 MB join leaves the CPU caches cold
        # for whatever runs next, which would blur the per-call figures above.
        for _ in range(calls):
            for route, renderer in ROUTES.items():
                start = time.process_time()
                body = renderer.render_bytes(log, None, MODEL, "Be brief.", cache=cache)
                samples[f"{route}-bytes"].append(time.process_time() - start)
                assert len(body) == sizes[route]
                del body
        for key, values in samples.items():
            per_call[key][number] = statistics.median(values)
    encodings = dict(counts)
    cold: dict[str, float] = {}
    for route, renderer in ROUTES.items():
        for each in ROUTES.values():
            each.forget()
        fresh = [StoredEvent(seq=r.seq, at=r.at, event=r.event.model_copy(deep=True)) for r in log]
        start = time.process_time()
        renderer.render_bytes(fresh, None, MODEL, "Be brief.", cache=cache)
        cold[route] = time.process_time() - start
    return {
        "screens": screens,
        "size": size,
        "events": len(log),
        "body_bytes": max(sizes.values()),
        "per_call": per_call,
        "encodings": encodings,
        "cold": cold,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.images", description=__doc__)
    parser.add_argument("--screens", type=int, default=20)
    parser.add_argument("--size", type=int, default=500_000)
    parser.add_argument("--calls", type=int, default=15)
    args = parser.parse_args(argv)
    result = run(args.screens, args.size, args.calls)
    twin = run(args.screens, args.size, args.calls, images=False)
    print(
        f"{result['screens']} screenshots of {result['size']} bytes, {result['events']} events, "
        f"final body {result['body_bytes'] / 1e6:.1f} MB"
    )
    marks = sorted({1, *range(5, args.screens + 1, 5), args.screens})
    print("median client CPU per call (ms) after n screenshots:")
    print("  " + f"{'':<22}" + "".join(f"{n:>9}" for n in marks))
    for key, values in result["per_call"].items():
        print("  " + f"{key:<22}" + "".join(f"{values[n] * 1e3:9.3f}" for n in marks))
        same = twin["per_call"][key]
        print(
            "  " + f"{key + ' (no images)':<22}" + "".join(f"{same[n] * 1e3:9.3f}" for n in marks)
        )
    print(f"image encodings per route: {result['encodings']} (screenshots: {args.screens})")
    print(
        "cold render of the full log (ms): "
        + ", ".join(f"{route} {value * 1e3:.1f}" for route, value in result["cold"].items())
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
