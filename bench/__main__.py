"""``python -m bench [--smoke] [--out PATH]``: run the benchmark and write the report.

The full run writes bench/RESULTS.md with the targets judged; ``--smoke`` runs tiny
sizes in seconds with no thresholds (peers that are not installed are listed as skipped)
and prints the report unless ``--out`` is given.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench import harness, procs, report, streaming
from bench.workload import Workload


@dataclass(frozen=True)
class Plan:
    """How much of everything to run."""

    sizes: tuple[tuple[int, int], ...]  # (turns, timed rounds)
    paired: tuple[tuple[int, int], ...]  # (turns, timed rounds) of the floors and nisse_llm alone
    warmup: int
    grow: tuple[int, int]
    import_rounds: int
    import_labels: tuple[str, ...]
    memory_turns: int
    memory_calls: int
    memory_keys: tuple[str, ...] | None  # None: every contender that ran
    longrun_calls: int
    longrun_every: int
    profiles: tuple[tuple[int, int], ...]  # (turns, profiled calls)
    render_rounds: int
    stream_deltas: int
    stream_rounds: int
    first_use_rounds: int = 15
    smoke: bool = False


FULL = Plan(
    sizes=((10, 100), (100, 40), (1000, 10)),
    paired=((100, 150), (1000, 30)),
    warmup=3,
    grow=(100, 1000),
    import_rounds=5,
    import_labels=tuple(procs.IMPORTS),
    memory_turns=100,
    memory_calls=500,
    memory_keys=None,
    longrun_calls=10_000,
    longrun_every=1_000,
    profiles=((100, 200), (1000, 30)),
    render_rounds=20,
    stream_deltas=1000,
    stream_rounds=100,
)

SMOKE = Plan(
    sizes=((2, 3),),
    paired=((2, 3),),
    warmup=1,
    grow=(2, 5),
    import_rounds=1,
    import_labels=("nisse_llm", "httpx, pydantic"),
    memory_turns=2,
    memory_calls=20,
    memory_keys=("floor-chat", "nisse-chat", "nisse-messages"),
    longrun_calls=40,
    longrun_every=10,
    profiles=((2, 3),),
    render_rounds=3,
    stream_deltas=10,
    stream_rounds=3,
    first_use_rounds=1,
    smoke=True,
)

LONGRUN_KEYS = ("floor-chat", "floor-messages", "nisse-chat", "nisse-messages")
GROW_KEYS = (
    "floor-chat",
    "nisse-chat",
    "httpx-orjson-chat",
    "floor-messages",
    "nisse-messages",
    "httpx-orjson-messages",
)


def run(plan: Plan, *, log: bool) -> report.Results:
    """Run every section of ``plan``; the results the report is written from."""

    def say(msg: str) -> None:
        if log:
            print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    res = report.Results(smoke=plan.smoke)
    stub_cpu, res.pinning = procs.pin_self()
    with harness.stub_server(cpu=stub_cpu) as base_url:
        contenders, res.skipped = harness.build_all(harness.catalogue_keys(), base_url)
        say(f"built {[c.key for c in contenders]}; skipped {sorted(res.skipped)}")
        contenders, failed = harness.check_all(contenders, Workload.of(plan.sizes[0][0]), base_url)
        res.skipped.update({k: f"failed its check: {v}" for k, v in failed.items()})
        res.ran = [c.key for c in contenders]
        for turns, rounds in plan.sizes:
            wl = Workload.of(turns)
            res.shapes[turns] = report.shape(wl)
            say(f"{turns} turns: {rounds} rounds x {len(contenders)} contenders")
            res.fixed[turns] = harness.interleave(contenders, wl, rounds=rounds, warmup=plan.warmup)
            res.renders[turns] = harness.render_costs(wl, rounds=plan.render_rounds)
        res.parse = {r: harness.parse_cost(r, rounds=200) for r in ("chat", "messages")}
        # The per-call targets: each floor and nisse_llm alone, as `bench.quick` times them.
        # Among all twelve contenders a floor's cache state depends on whom it follows.
        paired = [c for c in contenders if c.group in ("floor", "nisse")]
        for turns, rounds in plan.paired:
            say(f"targets at {turns} turns: {rounds} rounds x {len(paired)} contenders")
            res.paired[turns] = harness.interleave(
                paired, Workload.of(turns), rounds=rounds, warmup=plan.warmup
            )

        growers = [c for c in contenders if c.key in GROW_KEYS]
        say(f"growing log {plan.grow[0]} -> {plan.grow[1]} turns")
        res.growth = harness.grow(growers, start=plan.grow[0], end=plan.grow[1])
        res.grow_range = plan.grow

        for turns, calls in plan.profiles:
            for c in contenders:
                if c.group == "nisse":
                    say(f"profiling {c.key} at {turns} turns")
                    res.profiles.append(harness.profile(c, Workload.of(turns), calls=calls))
        for c in contenders:
            c.close()

        say(f"streaming: {plan.stream_deltas} deltas x {plan.stream_rounds} rounds per route")
        res.streaming = streaming.measure(
            base_url, deltas=plan.stream_deltas, rounds=plan.stream_rounds, warmup=plan.warmup
        )

        for row in res.streaming:
            if row.json_floor:
                say(f"streaming {row.route}: {row.nisse / row.json_floor:.2f}x the json floor")
        say("first use")
        res.first_use = procs.first_use_times(base_url, rounds=plan.first_use_rounds)
        res.first_use_rounds = plan.first_use_rounds
        base = res.first_use.get(report.FIRST_USE_BASE)
        for label, seconds in res.first_use.items():
            if seconds is not None and base:
                say(f"first use, {label}: {seconds * 1e3:.1f} ms ({seconds / base:.2f}x)")

        say("import times")
        res.imports = procs.import_times(list(plan.import_labels), rounds=plan.import_rounds)
        res.import_rounds = plan.import_rounds

        keys = plan.memory_keys or tuple(res.ran)
        for key in keys:
            if key in res.ran:
                say(f"memory: {key}")
                res.memory[key] = procs.memory(
                    key, base_url, turns=plan.memory_turns, calls=plan.memory_calls
                )
        res.memory_plan = (plan.memory_turns, plan.memory_calls)
        for key in LONGRUN_KEYS:
            if key in res.ran:
                say(f"{plan.longrun_calls} calls: {key}")
                res.longrun[key] = procs.memory(
                    key,
                    base_url,
                    turns=plan.memory_turns,
                    calls=plan.longrun_calls,
                    every=plan.longrun_every,
                )
    return res


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, no thresholds")
    parser.add_argument("--out", help="report path (default: bench/RESULTS.md; smoke: stdout)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    parser.add_argument("--notes", help="a markdown file (findings) placed after the targets table")
    args = parser.parse_args(argv)
    plan = SMOKE if args.smoke else FULL
    command = "python -m bench" + (" --smoke" if args.smoke else "")
    results = run(plan, log=not args.quiet)
    # Read after the run, so findings written while it runs can be included.
    notes = ""
    if args.notes:
        try:
            notes = Path(args.notes).read_text()
        except OSError as exc:  # a run's results are never lost for want of its notes
            print(
                f"notes not included ({exc}); the report is written without them", file=sys.stderr
            )
    text = report.render(results, command=command, notes=notes)
    out = args.out or (None if args.smoke else str(Path(__file__).parent / "RESULTS.md"))
    if out is None:
        sys.stdout.write(text)
    else:
        Path(out).write_text(text)
        print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
