"""The task file's former home, kept for imports written against it: it lives in
`nisse_llm.task.logstore`."""

from nisse_llm.task.logstore import (
    LogCorrupt,
    LogDuplicateId,
    LogFileReplaced,
    LogRead,
    LogSequenceError,
    LogStore,
    LogTornTail,
    TaskHeaderMissing,
    TaskPinMismatch,
)

__all__ = [
    "LogCorrupt",
    "LogDuplicateId",
    "LogFileReplaced",
    "LogRead",
    "LogSequenceError",
    "LogStore",
    "LogTornTail",
    "TaskHeaderMissing",
    "TaskPinMismatch",
]
