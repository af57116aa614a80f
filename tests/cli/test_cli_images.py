"""``nisse-llm complete --image PATH``: images sent with the prompt, on both routes."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from nisse_llm.cli.main import main
from nisse_llm.testing.images import jpeg, png
from tests.config.helpers import write_config
from tests.transport.harness import TOKEN
from tests.transport.loopback import LoopbackServer

ROLES = {
    "executor": "gpt-4o-mini",
    "planner": "claude-sonnet-4-5",
    "delegate": "claude-opus-4-1",
    "consultant": "openai/gpt-5",
}


@pytest.fixture
def config(tmp_path: Path, server: LoopbackServer) -> str:
    path = write_config(
        tmp_path / "nisse.toml",
        {
            "llm": {"base_url": server.base_url, "token": TOKEN, "rate_limit_retries": 0},
            "roles": ROLES,
        },
    )
    return str(path)


@pytest.fixture
def shots(tmp_path: Path) -> tuple[Path, Path]:
    first = tmp_path / "before.png"
    first.write_bytes(png(7, 5, seed=1))
    second = tmp_path / "after.jpg"
    second.write_bytes(jpeg(9, 4))
    return first, second


def test_images_go_before_the_prompt_on_the_messages_route(
    config: str, server: LoopbackServer, shots: tuple[Path, Path]
) -> None:
    """Each --image, in order, becomes an image block ahead of the prompt's text."""
    first, second = shots
    argv = ["complete", "--role", "planner", "--config", config]
    code = main([*argv, "--image", str(first), "--image", str(second), "what changed?"])
    assert code == 0
    (seen,) = server.requests
    (message,) = seen.json()["messages"]
    blocks = message["content"]
    assert [b["type"] for b in blocks] == ["image", "image", "text"]
    assert blocks[0]["source"]["media_type"] == "image/png"
    assert base64.b64decode(blocks[0]["source"]["data"]) == first.read_bytes()
    assert blocks[1]["source"]["media_type"] == "image/jpeg"
    assert base64.b64decode(blocks[1]["source"]["data"]) == second.read_bytes()
    assert blocks[2]["text"] == "what changed?"


def test_images_go_as_image_url_parts_on_the_chat_route(
    config: str, server: LoopbackServer, shots: tuple[Path, Path]
) -> None:
    """On the chat route each image is a user message with a data-URL image part."""
    first, _ = shots
    code = main(["complete", "--role", "executor", "--config", config, "--image", str(first), "hi"])
    assert code == 0
    (seen,) = server.requests
    messages = seen.json()["messages"]
    assert messages[-1] == {"role": "user", "content": "hi"}
    (part,) = messages[0]["content"]
    assert part["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(
        first.read_bytes()
    ).decode("ascii")


def test_a_mislabelled_or_missing_image_fails_before_sending(
    config: str, server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A .png holding a JPEG, or no such file: an error naming the file, nothing sent."""
    liar = tmp_path / "shot.png"
    liar.write_bytes(jpeg())
    argv = ["complete", "--role", "planner", "--config", config, "--image"]
    assert main([*argv, str(liar), "hi"]) == 1
    assert f"{liar} is labelled image/png but its bytes are image/jpeg" in capsys.readouterr().err
    assert main([*argv, str(tmp_path / "absent.png"), "hi"]) != 0
    assert "absent.png" in capsys.readouterr().err
    assert server.requests == []
