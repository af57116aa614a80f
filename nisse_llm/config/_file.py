"""Reading a configuration file safely: a bounded regular file, TOML parsed with its
errors placed, and warnings for files others can read or write (no models here).

A hostile or careless file cannot cost unbounded time or memory: a FIFO or a device is
refused without blocking, the size is capped, and lines nesting deeper than tomllib can
parse in bounded time are refused before it sees them.
"""

from __future__ import annotations

import os
import re
import stat
import tomllib
import warnings
from pathlib import Path
from typing import Any

from nisse_llm.errors import ConfigError, InsecureConfigFileWarning

__all__ = [
    "InsecureConfigFileWarning",
    "file_line",
    "read_toml",
    "warn_if_exposed",
    "warn_if_writable",
]

# Largest configuration file read: a real one is a few hundred bytes.
_MAX_CONFIG_BYTES = 64 * 1024
# Most dots or brackets one line may hold: tomllib takes quadratic time in a key's depth
# (8,000 dotted parts: 2 s), so deeper lines are refused before it sees them.
_MAX_LINE_NESTING = 256


def read_toml(path: Path, named_by: str) -> tuple[dict[str, Any], str]:
    try:
        raw = _read_regular_file(path, named_by)
    except FileNotFoundError:
        raise ConfigError(f"config file {path} (named by {named_by}) does not exist") from None
    except OSError as exc:
        raise ConfigError(
            f"cannot read config file {path} (named by {named_by}): {exc.strerror or exc}"
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"config file {path} is not UTF-8 text (line {line}, byte {exc.start})"
        ) from None
    deep = _too_nested(text)
    if deep:
        raise ConfigError(
            f"{path}, line {deep}: invalid TOML: nested too deeply (over {_MAX_LINE_NESTING} "
            "dots or brackets on one line)"
        )
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as exc:
        line, column, reason = _syntax_position(str(exc), text)
    except RecursionError:
        line, column, reason = 0, 0, "nested too deeply"
    except ValueError as exc:  # an integer of more digits than Python converts
        line, column, reason = 0, 0, _first_line(exc)
    if not line:
        raise ConfigError(f"{path}: invalid TOML: {reason}")
    raise ConfigError(f"{path}, line {line}, column {column}: invalid TOML: {reason}")


def _too_nested(text: str) -> int:
    """The number of the first line nesting past `_MAX_LINE_NESTING`, or 0."""
    for number, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith("#"):
            continue
        if max(line.count("."), line.count("[") + line.count("{")) > _MAX_LINE_NESTING:
            return number
    return 0


def _read_regular_file(path: Path, named_by: str) -> bytes:
    """The bytes of a regular file of at most `_MAX_CONFIG_BYTES`, opened without blocking
    (a FIFO would wait for a writer, /dev/zero never ends); `ConfigError` otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(
                f"config file {path} (named by {named_by}) is not a regular file "
                f"({_file_kind(info.st_mode)})"
            )
        if info.st_size > _MAX_CONFIG_BYTES:
            raise ConfigError(
                f"config file {path} (named by {named_by}) holds {info.st_size} bytes; "
                f"a configuration is at most {_MAX_CONFIG_BYTES}"
            )
        with os.fdopen(os.dup(fd), "rb") as file:
            raw = file.read(_MAX_CONFIG_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > _MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {path} grew past {_MAX_CONFIG_BYTES} bytes while read")
    return raw


def _file_kind(mode: int) -> str:
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or ["no detail"])[0][:200]


def _syntax_position(message: str, text: str) -> tuple[int, int, str]:
    """Line, column and reason of a tomllib error (its position is only in the text)."""
    found = re.search(r"\s*\(at line (\d+), column (\d+)\)$", message)
    if found:
        return int(found[1]), int(found[2]), message[: found.start()]
    found = re.search(r"\s*\(at end of document\)$", message)
    lines = text.split("\n")
    reason = message[: found.start()] if found else message
    return len(lines), len(lines[-1]) + 1, reason


def warn_if_exposed(path: Path) -> None:
    _warn_if_open(
        path,
        0o077,
        "{path} holds llm.token and is readable by group or others (mode {mode}); "
        "run chmod 600 {path}, or set NISSE_LLM_TOKEN instead",
    )


def warn_if_writable(path: Path) -> None:
    # Whoever can write the file can point base_url elsewhere while the token comes from
    # the environment: as grave as a readable token.
    _warn_if_open(
        path,
        0o022,
        "{path} is writable by group or others (mode {mode}): they can redirect "
        "llm.base_url and so the token; run chmod go-w {path}",
    )


def _warn_if_open(path: Path, bits: int, message: str) -> None:
    """Warn with ``message`` (``{path}`` and ``{mode}`` filled in) when the file's mode has
    any of ``bits`` on a POSIX system; a file that cannot be read for its mode is passed."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return
    if os.name == "posix" and mode & bits:
        text = message.format(path=path, mode=f"{mode & 0o777:04o}")
        # Level 3: the warning names the line that called warn_if_exposed or warn_if_writable.
        warnings.warn(InsecureConfigFileWarning(text), stacklevel=3)


def file_line(text: str, loc: tuple[str, ...]) -> int | None:
    """The line of ``loc``'s assignment in the TOML text: under its ``[table]`` header, or
    as a dotted key (``llm.base_url = ...``) before any table. ``None`` when not found."""
    *tables, key = loc
    wanted = ".".join(tables)
    current = ""
    assignment = re.compile(r"\s*(?P<key>[A-Za-z0-9_.\-\"' ]+?)\s*=")
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        header = re.fullmatch(r"\[\s*([^\[\]]+?)\s*\]\s*(#.*)?", stripped)
        if header:
            current = re.sub(r"[\s\"']", "", header[1])
            continue
        found = assignment.match(line)
        if not found:
            continue
        name = found["key"].replace(" ", "").replace('"', "").replace("'", "")
        full = f"{current}.{name}" if current else name
        if full == f"{wanted}.{key}" if wanted else full == key:
            return number
    return None
