"""The committed JSON Schemas are current, describe the TOML file, and reject broken files."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from nisse_llm.cli.schema import check_schemas, render_schemas, write_schemas
from nisse_llm.config.settings import ENV_VARS, load_settings
from nisse_llm.errors import ConfigError
from nisse_llm.events.canonical import StoredEvent, ToolCall, dump_jsonl
from tests.config.helpers import (
    COMPLETE,
    CONFIG_SCHEMA,
    EXAMPLE,
    SCHEMAS,
    complete,
    write_config,
)


def _validator(name: str = CONFIG_SCHEMA.name) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMAS / name).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_committed_schemas_are_current() -> None:
    """Every generated schema equals the committed file; run `nisse-llm schema` if not."""
    assert check_schemas(SCHEMAS).current


def test_the_example_file_validates_against_the_committed_schema() -> None:
    """config/nisse-llm.example.toml, parsed with tomllib, is valid under the schema."""
    document = tomllib.loads(EXAMPLE.read_text())
    _validator().validate(document)
    assert EXAMPLE.read_text().splitlines()[0] == "#:schema ../schemas/nisse-llm.config.schema.json"
    assert (EXAMPLE.parent / "../schemas/nisse-llm.config.schema.json").resolve() == CONFIG_SCHEMA


@pytest.mark.parametrize(
    ("document", "path", "keyword"),
    [
        (complete(llm={"max_output_tokens": "many"}), ["llm", "max_output_tokens"], "type"),
        (complete(llm={"timeout_s": 0}), ["llm", "timeout_s"], "exclusiveMinimum"),
        (complete(llm={"base_url": "ftp://h"}), ["llm", "base_url"], "pattern"),
        (complete(llm={"prompt_cache_ttl": "2h"}), ["llm", "prompt_cache_ttl"], "enum"),
        (complete(roles={"Code-Review": "x"}), ["roles"], "additionalProperties"),
        ({**COMPLETE, "role": {"planner": "x"}}, [], "additionalProperties"),
        ({**COMPLETE, "llm": "http://h"}, ["llm"], "type"),
    ],
    ids=[
        "wrong-type",
        "out-of-bounds",
        "not-http",
        "bad-ttl",
        "unknown-key",
        "unknown-table",
        "not-a-table",
    ],
)
def test_broken_files_are_rejected_by_the_schema_and_the_loader(
    document: dict[str, Any], path: list[str], keyword: str, tmp_path: Path
) -> None:
    """A wrong type, an unknown key or table fails the schema, and loading fails too."""
    errors = list(_validator().iter_errors(document))
    assert [(list(e.absolute_path), e.validator) for e in errors] == [(path, keyword)]
    with pytest.raises(ConfigError):
        load_settings(write_config(tmp_path / "c.toml", document))


def test_nothing_is_required_in_the_file() -> None:
    """Any key may come from the environment, so an empty or partial file is schema-valid."""
    validator = _validator()
    validator.validate({})
    validator.validate({"roles": {"planner": "openai/gpt-5"}})
    assert '"required":' not in CONFIG_SCHEMA.read_text()


def test_every_key_is_described_with_its_environment_variable() -> None:
    """Each property's description names the env variable that can replace it."""
    schema = json.loads(CONFIG_SCHEMA.read_text())
    described = {}
    for table, ref in (("llm", "LLMSettings"), ("roles", "RoleMap")):
        definition = schema["$defs"][ref]
        assert definition["additionalProperties"] is False
        for key, prop in definition["properties"].items():
            described[f"{table}.{key}"] = prop["description"]
    assert schema["additionalProperties"] is False
    described["require_roles"] = schema["properties"]["require_roles"]["description"]
    # A role table's options share one definition: its descriptions name the variable pattern.
    profile = schema["$defs"]["RoleProfile"]
    assert profile["additionalProperties"] is False
    for role in ("executor", "planner", "delegate", "consultant"):
        for key, prop in profile["properties"].items():
            if key != "model":
                pattern = f"NISSE_ROLE_<ROLE>_{key.upper()}"
                assert prop["description"].endswith(f" Environment variable: {pattern}.")
                described[f"roles.{role}.{key}"] = prop["description"].replace(
                    "<ROLE>", role.upper()
                )
    for key in ("task_store", "task_schema"):
        described[key] = schema["properties"][key]["description"]
    assert set(described) == set(ENV_VARS)
    for key, description in described.items():
        assert description.endswith(f" Environment variable: {ENV_VARS[key]}.")


def test_the_canonical_schemas_accept_what_the_log_writes() -> None:
    """A stored event as dump_jsonl writes it validates against stored-event.schema.json."""
    record = StoredEvent.now(0, ToolCall(call_id="call_1", tool="read_file", arguments={"p": 1}))
    line = json.loads(dump_jsonl([record]))
    _validator("stored-event.schema.json").validate(line)
    _validator("canonical-event.schema.json").validate(line["event"])
    with pytest.raises(jsonschema.ValidationError):
        _validator("canonical-event.schema.json").validate({"kind": "tool_call", "tool": "x"})


def test_rendering_is_deterministic() -> None:
    """Two renders are byte-identical, keys sorted, each file ending in one newline."""
    first, second = render_schemas(), render_schemas()
    assert first == second
    for text in first.values():
        assert text.endswith("}\n")
        assert (
            text
            == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        )


def test_check_reports_missing_changed_and_orphaned_files(tmp_path: Path) -> None:
    """check_schemas names stale files; write_schemas brings the folder back to current."""
    assert write_schemas(tmp_path) == list(render_schemas())
    assert check_schemas(tmp_path).current
    (tmp_path / "stored-event.schema.json").write_text("{}\n")
    (tmp_path / "canonical-event.schema.json").unlink()
    (tmp_path / "old.schema.json").write_text("{}\n")
    found = check_schemas(tmp_path)
    assert not found.current
    assert found.folder == tmp_path.absolute()
    assert found.missing == ["canonical-event.schema.json"]
    assert found.stale == ["stored-event.schema.json"]
    assert found.extra == ["old.schema.json"]
    assert sorted(write_schemas(tmp_path)) == [
        "canonical-event.schema.json",
        "old.schema.json",
        "stored-event.schema.json",
    ]
    assert check_schemas(tmp_path).current
    assert not (tmp_path / "old.schema.json").exists()
