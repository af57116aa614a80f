"""The nisse-llm command: config check/show, schema, exit codes, and plain-word errors."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nisse_llm.cli import main as cli
from nisse_llm.cli.main import exit_code, main
from nisse_llm.config.settings import load_settings
from nisse_llm.errors import (
    AuthenticationFailed,
    BudgetExhausted,
    ConfigError,
    LLMError,
    ModelRefusal,
    RenderError,
    TruncatedResponse,
    UpstreamUnavailable,
)
from tests.config.helpers import COMPLETE, EXAMPLE, REPO, SCHEMAS, complete, write_config

TABLE = [
    "role        model              route",
    "executor    claude-sonnet-4-5  anthropic_messages",
    "planner     openai/gpt-5       openai_chat",
    "delegate    claude-opus-4-1    anthropic_messages",
    "consultant  openai/gpt-5-mini  openai_chat",
]
#: What `config check` prints for config/nisse-llm.example.toml (current models).
EXAMPLE_TABLE = [
    "role        model              route",
    "executor    claude-sonnet-5-5  anthropic_messages",
    "planner     claude-opus-5-5    anthropic_messages",
    "delegate    claude-haiku-5-5   anthropic_messages",
    "consultant  gpt-6-astra        openai_responses",
]


def _role_table(out: str, *, sources: bool = False) -> list[str]:
    """The role table of `config check` (header and four rows), without the source column
    unless ``sources``; each row as the old three-column text."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("role "))
    rows = [re.split(r"  +", line.strip()) for line in lines[start : start + 5]]
    if sources:
        return [" | ".join(row) for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths, strict=True)).rstrip()
        for row in rows
    ]


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_config_check_prints_each_role_model_and_route(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A valid file prints the role table and exits 0, with nothing on stderr."""
    path = write_config(tmp_path / "c.toml", COMPLETE)
    code, out, err = _run(["config", "check", "--config", str(path)], capsys)
    assert (code, err) == (0, "")
    assert out.splitlines()[:2] == [
        f"configuration OK: {path} (named by the config path argument)",
        "proxy: http://127.0.0.1:4000",
    ]
    assert _role_table(out) == TABLE


def test_config_check_reads_nisse_config_and_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --config the file comes from NISSE_CONFIG and env values override it."""
    monkeypatch.setenv("NISSE_CONFIG", str(write_config(tmp_path / "c.toml", COMPLETE)))
    monkeypatch.setenv("NISSE_ROLE_PLANNER", "claude-haiku-4-5")
    code, out, _ = _run(["config", "check"], capsys)
    assert code == 0
    assert "planner | claude-haiku-4-5 | anthropic_messages | env NISSE_ROLE_PLANNER" in (
        _role_table(out, sources=True)
    )


def test_config_check_prints_every_error_and_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An invalid configuration prints every problem on stderr in plain words, exit 2."""
    monkeypatch.setenv("NISSE_MAX_OUTPUT_TOKENS", "lots")
    path = write_config(tmp_path / "c.toml", {"role": {"planner": "x"}})
    code, out, err = _run(["config", "check", "--config", str(path)], capsys)
    assert (code, out) == (2, "")
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert err == f"error: {caught.value}\n"
    # The misspelled [role] leads, standing for the four roles it leaves missing.
    assert err.startswith(
        f"error: invalid configuration (file {path}), 4 problems:\n  - [role]: unknown table"
    )
    assert (
        "  - llm.max_output_tokens (env NISSE_MAX_OUTPUT_TOKENS): input should be a valid integer, got 'lots'; from environment variable NISSE_MAX_OUTPUT_TOKENS\n"
        in err
    )


def test_config_check_reports_a_syntax_error_and_a_missing_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """TOML syntax errors and absent files are one plain line each, exit 2."""
    broken = write_config(tmp_path / "c.toml", "[llm\n")
    code, _, err = _run(["config", "check", "--config", str(broken)], capsys)
    assert (code, err) == (
        2,
        f"error: {broken}, line 1, column 5: invalid TOML: Expected ']' at the end of a table declaration\n",
    )
    code, _, err = _run(["config", "check", "--config", str(tmp_path / "none.toml")], capsys)
    assert (code, err) == (
        2,
        f"error: config file {tmp_path / 'none.toml'} (named by the config path argument) does not exist\n",
    )


def test_a_readable_token_file_is_a_warning_not_a_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The permission warning is printed as one plain line and the check still passes."""
    path = write_config(tmp_path / "c.toml", COMPLETE, mode=0o640)
    code, out, err = _run(["config", "check", "--config", str(path)], capsys)
    assert code == 0
    assert _role_table(out) == TABLE
    assert err == (
        f"warning: {path} holds llm.token and is readable by group or others (mode 0640); "
        f"run chmod 600 {path}, or set NISSE_LLM_TOKEN instead\n"
    )


def test_config_show_json_prints_the_pin_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """config show --json prints exactly the pin's record."""
    path = write_config(tmp_path / "c.toml", complete(llm={"prompt_cache_ttl": "1h"}))
    code, out, _ = _run(["config", "show", "--json", "--config", str(path)], capsys)
    assert code == 0
    shown = json.loads(out)
    assert shown["record"] == load_settings(path).pin().record()
    assert shown["sources"] == load_settings(path).sources
    assert shown["sources"]["llm.prompt_cache_ttl"].startswith(f"file {path}, line ")


def test_config_show_prints_a_readable_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """config show prints one line per knob and the role table, and its fingerprint."""
    path = write_config(tmp_path / "c.toml", COMPLETE)
    code, out, _ = _run(["config", "show", "--config", str(path)], capsys)
    lines = out.splitlines()
    assert code == 0
    assert lines[0] == "format: 1"
    assert lines[1].startswith(f"base_url: http://127.0.0.1:4000  (file {path}, line ")
    assert lines[2] == "max_output_tokens: 16384  (default)"
    assert "passthrough_prefixes: claude-, anthropic/  (default)" in lines
    assert f"fingerprint: {load_settings(path).pin().fingerprint}" in lines
    assert lines[-5] == "roles:"
    roles = [re.split(r"  +", line.strip()) for line in lines[-4:]]
    assert [row[:3] for row in roles] == [re.split(r"  +", row) for row in TABLE[1:]]
    assert all(row[3].startswith(f"file {path}, line ") for row in roles)


def test_schema_check_passes_on_the_committed_schemas(capsys: pytest.CaptureFixture[str]) -> None:
    """schema --check exits 0 when every committed file is current."""
    code, out, _ = _run(["schema", "--check", "--dir", str(SCHEMAS)], capsys)
    assert (code, out) == (0, f"schemas in {SCHEMAS} are current\n")


def test_schema_check_lists_stale_files_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """schema --check on a stale folder names each stale file and exits 1; schema fixes it."""
    code, out, _ = _run(["schema", "--dir", str(tmp_path)], capsys)
    assert code == 0
    assert f"wrote {tmp_path}/nisse-llm.config.schema.json" in out.splitlines()
    (tmp_path / "nisse-llm.config.schema.json").write_text("{}\n")
    code, out, err = _run(["schema", "--check", "--dir", str(tmp_path)], capsys)
    assert (code, out) == (1, "")
    assert err == (
        f"looked in {tmp_path}\nstale: {tmp_path}/nisse-llm.config.schema.json\n"
        f"run `nisse-llm schema --dir {tmp_path}` to regenerate\n"
    )
    (tmp_path / "canonical-event.schema.json").unlink()
    (tmp_path / "old.schema.json").write_text("{}\n")
    code, _, err = _run(["schema", "--check", "--dir", str(tmp_path)], capsys)
    assert code == 1
    assert f"missing: {tmp_path}/canonical-event.schema.json" in err.splitlines()
    assert f"no longer generated: {tmp_path}/old.schema.json" in err.splitlines()
    assert _run(["schema", "--dir", str(tmp_path)], capsys)[0] == 0
    assert _run(["schema", "--check", "--dir", str(tmp_path)], capsys)[0] == 0


def test_schema_check_on_a_missing_folder_says_where_it_looked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder that does not exist: every file is missing, and the absolute path is named."""
    where = tmp_path / "nowhere"
    code, out, err = _run(["schema", "--check", "--dir", str(where)], capsys)
    assert (code, out) == (1, "")
    assert err.splitlines()[0] == f"looked in {where}"
    assert f"missing: {where}/nisse-llm.config.schema.json" in err.splitlines()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], 2),
        (["config"], 2),
        (["config", "check", "--bogus"], 2),
        (["frobnicate"], 2),
        (["--help"], 0),
    ],
)
def test_usage_errors_exit_2(
    argv: list[str], expected: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """argparse usage errors return 2 (and --help 0) instead of raising SystemExit."""
    code, out, err = _run(argv, capsys)
    assert code == expected
    assert ("usage: nisse-llm" in err) if expected else ("usage: nisse-llm" in out)


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (BudgetExhausted("budget gone"), 4),
        (UpstreamUnavailable("proxy down"), 3),
        (ConfigError("bad key"), 2),
        (AuthenticationFailed("token refused", status=401), 2),
        (LLMError("bad request"), 1),
        (TruncatedResponse("cut off"), 1),
        (RenderError("corrupt log"), 1),
        (ModelRefusal("declined"), 1),
    ],
)
def test_each_error_class_maps_to_its_exit_code(
    error: LLMError,
    code: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """exit_code maps the error tree, and a subcommand raising it exits with that code."""
    assert exit_code(error) == code

    def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
        def fail(args: argparse.Namespace) -> int:
            raise error

        commands.add_parser("fail").set_defaults(handler=fail)

    monkeypatch.setattr(cli, "REGISTRARS", [*cli.REGISTRARS, register])
    assert _run(["fail"], capsys) == (code, "", f"error: {error}\n")


def test_the_installed_script_checks_the_example(tmp_path: Path) -> None:
    """The nisse-llm console script validates config/nisse-llm.example.toml and prints the table."""
    script = Path(sys.executable).parent / "nisse-llm"
    result = subprocess.run(
        [str(script), "config", "check", "--config", "config/nisse-llm.example.toml"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:2] == [
        f"configuration OK: {EXAMPLE.relative_to(REPO)} (named by the config path argument)",
        "proxy: http://127.0.0.1:4000",
    ]
    assert _role_table(result.stdout) == EXAMPLE_TABLE
    assert "Traceback" not in result.stderr


def test_config_check_and_show_print_role_profiles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A role with a profile adds an options column to check and to show."""
    planner = {"model": "openai/gpt-5", "reasoning": "high", "max_output_tokens": 32000}
    path = write_config(tmp_path / "c.toml", complete(roles={"planner": planner}))
    code, out, _ = _run(["config", "check", "--config", str(path)], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[2].split() == ["role", "model", "route", "source", "options"]
    assert lines[4].startswith("planner     openai/gpt-5       openai_chat         file ")
    assert lines[4].endswith('  max_output_tokens=32000 reasoning="high"')
    assert lines[3].endswith("line 5")  # no options: nothing after the source
    assert any(line.split()[:2] == ["roles.planner.reasoning", "high"] for line in lines)
    code, out, _ = _run(["config", "show", "--config", str(path)], capsys)
    assert code == 0
    (shown,) = [line for line in out.splitlines() if line.startswith("  planner ")]
    assert shown.endswith('  max_output_tokens=32000 reasoning="high"')
    code, out, _ = _run(["config", "show", "--json", "--config", str(path)], capsys)
    assert json.loads(out)["record"]["roles"]["planner"]["options"] == {
        "max_output_tokens": 32000,
        "reasoning": "high",
    }


def test_config_check_refuses_an_invalid_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    planner = {"model": "claude-opus-4-1", "reasoning": "high", "tool_choice": "required"}
    path = write_config(tmp_path / "c.toml", complete(roles={"planner": planner}))
    code, out, err = _run(["config", "check", "--config", str(path)], capsys)
    assert (code, out) == (2, "")
    assert "roles.planner.reasoning (env NISSE_ROLE_PLANNER_REASONING)" in err
    assert "no forced tool" in err
