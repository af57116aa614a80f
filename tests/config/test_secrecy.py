"""The token never appears: not in reprs, records, schemas, error messages or CLI output."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from nisse_llm.cli.main import main
from nisse_llm.config.settings import Pin, load_settings
from nisse_llm.errors import ConfigError
from tests.config.helpers import COMPLETE, SCHEMAS, TOKEN, complete, write_config


def test_reprs_and_strs_never_show_the_token(tmp_path: Path) -> None:
    """repr/str of settings, their tables, the pin and its dumps hide the token."""
    settings = load_settings(write_config(tmp_path / "c.toml", COMPLETE))
    pin = settings.pin()
    shown = [
        repr(settings),
        str(settings),
        repr(settings.llm),
        str(settings.llm),
        repr(pin),
        str(pin),
        pin.model_dump_json(),
        str(pin.model_dump()),
        settings.model_dump_json(),
        json.dumps(pin.record()),
        str(pin.__dict__),
    ]
    for text in shown:
        assert TOKEN not in text
    assert "**********" in repr(pin)


def test_schemas_never_hold_the_token() -> None:
    """No committed schema contains the token or any token-like default."""
    for path in SCHEMAS.glob("*.schema.json"):
        text = path.read_text()
        assert TOKEN not in text
        assert "sk-" not in text


def _error_for(action: Callable[[], object]) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        action()
    return caught.value


def test_error_messages_never_show_the_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever goes wrong, and wherever the token came from, no message contains it."""
    good = write_config(tmp_path / "good.toml", COMPLETE)
    errors = [
        # a bad token is named but never echoed, from each source
        _error_for(lambda: load_settings(good, llm={"token": TOKEN + " with space"})),
        _error_for(
            lambda: load_settings(
                write_config(tmp_path / "a.toml", complete(llm={"token": "\n" + TOKEN}))
            )
        ),
        _error_for(lambda: load_settings(good, llm={"token": 12345678})),
        # the token pasted into another key is redacted from that key's echo
        _error_for(lambda: load_settings(good, llm={"base_url": "ftp://h/?key=" + TOKEN})),
        _error_for(lambda: load_settings(good, roles={"planner": "bad " + TOKEN})),
        # unrelated errors while the token is loaded
        _error_for(lambda: load_settings(good, llm={"timeout_s": -1}, role={"x": TOKEN})),
        # a pin rebuilt with a bad token
        _error_for(
            lambda: Pin.from_record(
                load_settings(good).pin().record(), TOKEN + "\n x", base_url="http://127.0.0.1:4000"
            )
        ),
    ]
    monkeypatch.setenv("NISSE_LLM_TOKEN", TOKEN + " env")
    errors.append(_error_for(lambda: load_settings(good)))
    monkeypatch.setenv("NISSE_LLM_TOKEN", TOKEN)
    monkeypatch.setenv("NISSE_ROLE_EXECUTOR", TOKEN + " oops")
    errors.append(_error_for(lambda: load_settings(good)))
    for error in errors:
        assert TOKEN not in str(error)
        assert TOKEN not in repr(error)
        assert all(TOKEN not in problem for problem in error.problems)
        assert error.__context__ is None
        assert error.__cause__ is None
    assert (
        "llm.token (env NISSE_LLM_TOKEN): must be printable ASCII without spaces; from the argument llm="
        in errors[0].problems
    )
    assert "got 'ftp://h/?key=[redacted]'" in str(errors[3])


@pytest.mark.parametrize(
    "argv",
    [
        ["config", "check"],
        ["config", "show"],
        ["config", "show", "--json"],
        ["schema", "--check"],
    ],
)
def test_cli_output_never_shows_the_token(
    argv: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every subcommand, succeeding or failing, prints nothing containing the token."""
    good = write_config(tmp_path / "good.toml", COMPLETE)
    exposed = write_config(tmp_path / "exposed.toml", COMPLETE, mode=0o644)
    bad = write_config(
        tmp_path / "bad.toml", complete(llm={"base_url": "x" + TOKEN, "token": TOKEN + " x"})
    )
    extra = ["--dir", str(SCHEMAS)] if argv[0] == "schema" else []
    for path in (good, exposed, bad):
        options = ["--config", str(path)] if argv[0] == "config" else []
        main([*argv, *options, *extra])
        out, err = capsys.readouterr()
        assert TOKEN not in out
        assert TOKEN not in err
    monkeypatch.setenv("NISSE_LLM_TOKEN", TOKEN)
    monkeypatch.setenv("NISSE_MAX_OUTPUT_TOKENS", TOKEN)
    assert main([*argv, *extra]) in (0, 2)
    out, err = capsys.readouterr()
    assert TOKEN not in out + err
