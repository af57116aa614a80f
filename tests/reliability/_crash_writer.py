"""A writer the crash test kills: repairs the log, then appends forever, printing each seq.

Run as ``python -m tests.reliability._crash_writer LOG_PATH``. It prints ``ready`` once
the log is repaired, then the seq of every record after `TaskStore.append` has returned
(so every printed seq is durable). Record sizes vary from a few bytes to 1 MiB, so a
kill often lands inside a write; some appends carry two or three records at once.
"""

from __future__ import annotations

import sys

from nisse_llm.events.canonical import StoredEvent, UserText
from nisse_llm.task.logstore import FileTaskStore

#: Most records per append; the checker allows this many unreported records after a kill.
MAX_BATCH = 3


def payload(seq: int) -> str:
    """The text of record ``seq``: its size and content are a function of ``seq`` alone."""
    mix = (seq * 2654435761) % 2**32
    size = 2**20 if mix % 17 == 0 else 64 * 1024 if mix % 5 == 0 else mix % 3000
    # Multi-byte characters too, so a torn line can end inside a UTF-8 sequence.
    unit = f"{seq}:åß∂-{mix % 97}|"
    return (unit * (size // len(unit) + 1))[:size]


def batch_size(seq: int) -> int:
    """How many records the append starting at ``seq`` carries."""
    return 1 + (seq * 40503) % MAX_BATCH


def main(path: str) -> None:
    store = FileTaskStore(path)
    store.repair()
    print("ready", flush=True)
    while True:
        first = store.next_seq
        batch = [
            StoredEvent.now(seq, UserText(text=payload(seq)))
            for seq in range(first, first + batch_size(first))
        ]
        store.append(batch)
        print("\n".join(str(record.seq) for record in batch), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
