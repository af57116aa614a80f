"""Resident memory of one contender in a fresh process: after import, then while calling.

``python -m bench.memory KEY BASE_URL --turns N --calls C --every E`` prints one JSON
line: RSS (KiB) before import, after import (library loaded, client built), and every
``E`` calls, with the count of GC-tracked objects beside each sample.
"""

from __future__ import annotations

import argparse
import gc
import json
import os


def rss_kib() -> int:
    """This process's resident set size in KiB (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("key")
    parser.add_argument("base_url")
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--every", type=int, default=0)
    args = parser.parse_args()

    from bench.contenders import build
    from bench.workload import Workload

    out: dict[str, object] = {"key": args.key, "rss_start": rss_kib()}
    contender = build(args.key, args.base_url)
    gc.collect()
    out["rss_import"] = rss_kib()
    wl = Workload.of(args.turns)
    samples = []
    for n in range(1, args.calls + 1):
        # nisse_llm: the last turn new on every call with no previous call on the prefix,
        # so cached progress and fragments churn as hard as they can.
        arg = wl.records_fresh_tail() if contender.group == "nisse" else contender.prepare(wl)
        contender.call(arg)
        if args.every and n % args.every == 0:
            gc.collect()
            samples.append({"calls": n, "rss": rss_kib(), "objects": len(gc.get_objects())})
    gc.collect()
    out["rss_after"] = rss_kib()
    out["samples"] = samples
    contender.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
