"""``python -m bench.quick [--turns 100 1000] [--rounds N]``: the per-call targets only.

The floor and nisse_llm on each route (chat, messages, Responses), interleaved with no
other contender, at the sizes given: the run the full report judges its per-call targets
from. Prints each route's median client CPU and its ratio to the floor. For measuring a
change in seconds rather than the full run's twenty minutes.
"""

from __future__ import annotations

import argparse
import sys

from bench import harness, procs
from bench.workload import Workload

KEYS = (
    "floor-chat",
    "nisse-chat",
    "floor-messages",
    "nisse-messages",
    "floor-responses",
    "nisse-responses",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.quick", description=__doc__)
    parser.add_argument("--turns", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--rounds", type=int, default=0, help="default: 150 at <=100, else 30")
    args = parser.parse_args(argv)
    stub_cpu, pinning = procs.pin_self()
    print(pinning)
    with harness.stub_server(cpu=stub_cpu) as base_url:
        contenders, skipped = harness.build_all(list(KEYS), base_url)
        if skipped:
            print(f"skipped: {skipped}")
        for turns in args.turns:
            wl = Workload.of(turns)
            rounds = args.rounds or (150 if turns <= 100 else 30)
            samples = harness.interleave(contenders, wl, rounds=rounds, warmup=3)
            for route in ("chat", "messages", "responses"):
                floor = samples[f"floor-{route}"].cpu_median
                own = samples[f"nisse-{route}"].cpu_median
                print(
                    f"{turns:>5} turns {route:<9} floor {floor * 1e3:7.3f} ms  "
                    f"nisse {own * 1e3:7.3f} ms  {own / floor:5.2f}x"
                )
        for c in contenders:
            c.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
