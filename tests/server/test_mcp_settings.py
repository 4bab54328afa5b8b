"""The ``[[mcp]]`` tables of the server's TOML (server/config/tools.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.__main__ import parse_args
from server.config.providers import SettingsError, load_file

ROOT = Path(__file__).resolve().parents[2]


def _load(tmp_path: Path, text: str) -> object:
    path = tmp_path / "riacho.toml"
    path.write_text(text, encoding="utf-8")
    return load_file(path)


def test_the_example_names_the_notes_server_over_stdio() -> None:
    (notes,) = load_file(ROOT / "riacho.example.toml").mcp
    assert notes.name == "notes"
    assert notes.command == ("python", "examples/notes_server.py")


def test_a_file_with_only_mcp_servers_is_accepted_and_reaches_the_config(
    tmp_path: Path,
) -> None:
    path = tmp_path / "riacho.toml"
    path.write_text(
        'approval_timeout_s = 5\n[[mcp]]\nname = "n"\nurl = "http://127.0.0.1:1/mcp"\n',
        encoding="utf-8",
    )
    config = parse_args(["--config", str(path)])
    assert [server.name for server in config.mcp] == ["n"]
    assert config.approval_timeout_s == 5
    assert parse_args(["--config", str(path), "--approval-timeout-s", "2"]).approval_timeout_s == 2


@pytest.mark.parametrize(
    ("table", "words"),
    [
        pytest.param('name = "a"\ncommand = ["x"]\nurl = "http://h/mcp"', "either", id="both"),
        pytest.param('name = "a"', "either", id="neither"),
        pytest.param('name = "a"\nurl = "http://h/mcp"\nenv = { A = "b" }', "env", id="env-url"),
        pytest.param(
            'name = "a"\ncommand = ["x"]\nheaders_env = { A = "B" }',
            "headers_env",
            id="headers-command",
        ),
        pytest.param('name = "a b"\ncommand = ["x"]', "name", id="bad-name"),
        pytest.param('name = "a"\ncommand = ["x"]\ncomand = 1', "comand", id="unknown-key"),
    ],
)
def test_a_wrong_mcp_table_is_refused_at_start(tmp_path: Path, table: str, words: str) -> None:
    with pytest.raises(SettingsError, match=words):
        _load(tmp_path, f"[[mcp]]\n{table}\n")


def test_two_servers_of_one_name_are_refused(tmp_path: Path) -> None:
    table = '[[mcp]]\nname = "a"\ncommand = ["x"]\n'
    with pytest.raises(SettingsError, match="used twice"):
        _load(tmp_path, table * 2)
