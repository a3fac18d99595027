"""Configuration: env prefix, .env support, unknown keys refused, .env.example complete."""

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from capsel.config import Settings, load_settings

ROOT = Path(__file__).resolve().parents[2]


def test_env_prefix_and_overrides(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CAPSEL_DB_PATH", "from_env.duckdb")
    assert load_settings().db_path == Path("from_env.duckdb")
    assert load_settings(db_path=Path("cli.duckdb")).db_path == Path("cli.duckdb")


def test_dotenv_file_is_read_and_typos_rejected(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("CAPSEL_MAX_FIELD_CHARS=123\n")
    assert load_settings().max_field_chars == 123
    (tmp_path / ".env").write_text("CAPSEL_MAX_FEILD_CHARS=123\n")
    with pytest.raises(ValidationError):
        load_settings()


def test_env_example_lists_every_setting():
    text = (ROOT / ".env.example").read_text()
    listed = set(re.findall(r"^#?\s*CAPSEL_([A-Z0-9_]+)=", text, flags=re.M))
    expected = {name.upper() for name in Settings.model_fields}
    assert listed == expected
    for name in expected:
        # each setting carries a comment line right above it
        assert re.search(rf"^# .+\n#?\s*CAPSEL_{name}=", text, flags=re.M), name
