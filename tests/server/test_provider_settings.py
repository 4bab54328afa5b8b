"""Provider settings: the command line, the TOML file, and their clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.__main__ import parse_args
from server.config import REPO_ROOT
from server.config.providers import SettingsError, load_file

LOCAL = ["--provider", "openai-chat", "--base-url", "http://127.0.0.1:11434/v1"]


def test_one_provider_from_the_command_line() -> None:
    config = parse_args([*LOCAL, "--model", "qwen2.5:0.5b", "--model", "llama3.2:1b"])
    (provider,) = config.providers
    assert provider.kind == "openai-chat"
    assert provider.base_url == "http://127.0.0.1:11434/v1"
    assert [m.id for m in provider.models] == ["qwen2.5:0.5b", "llama3.2:1b"]
    assert provider.key_env is None  # NOTE: a local OpenAI-compatible server needs no key
    assert provider.context_window(provider.models[0]) == 32_768


def test_command_line_overrides_timeouts_window_and_cap() -> None:
    config = parse_args(
        [
            *LOCAL,
            "--model",
            "m",
            "--api-key-env",
            "MY_KEY",
            "--context-window",
            "8192",
            "--first-byte-timeout-s",
            "3",
            "--provider-idle-timeout-s",
            "9",
            "--max-model-calls",
            "4",
        ]
    )
    (provider,) = config.providers
    assert (provider.key_env, provider.first_byte_timeout_s, provider.idle_timeout_s) == (
        "MY_KEY",
        3.0,
        9.0,
    )
    assert provider.context_window(provider.models[0]) == 8192
    assert config.max_model_calls == 4


@pytest.mark.parametrize(
    ("kind", "key_env"),
    [
        ("openai-responses", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("google", "GEMINI_API_KEY"),
    ],
)
def test_hosted_providers_read_their_conventional_key_variable(kind: str, key_env: str) -> None:
    (provider,) = parse_args(["--provider", kind, "--model", "m"]).providers
    assert provider.key_env == key_env
    assert provider.base_url is None  # NOTE: the SDK's own public endpoint


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["--provider", "openai-chat"], "needs at least one --model", id="no-model"),
        pytest.param(["--model", "m"], "need --provider", id="model-without-provider"),
        pytest.param(["--provider", "ollama", "--model", "m"], "invalid choice", id="bad-kind"),
        pytest.param(
            ["--provider", "google", "--model", "riacho-demo"],
            "configured twice",
            id="id-taken-by-the-demo",
        ),
        pytest.param(
            [*LOCAL, "--model", "m", "--context-window", "0"],
            "greater than 0",
            id="bad-window",
        ),
    ],
)
def test_unusable_command_line_exits_with_a_clear_message(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_args(argv)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_the_example_file_in_the_repository_loads() -> None:
    file = load_file(REPO_ROOT / "riacho.example.toml")
    kinds = [provider.kind for provider in file.providers]
    assert sorted(set(kinds)) == ["anthropic", "google", "openai-chat", "openai-responses"]
    ids = [model.id for provider in file.providers for model in provider.models]
    assert len(ids) == len(set(ids))


def test_file_and_command_line_together(tmp_path: Path) -> None:
    path = tmp_path / "riacho.toml"
    path.write_text(
        'max_model_calls = 3\n[[providers]]\nkind = "anthropic"\n'
        '[[providers.models]]\nid = "claude"\nlabel = "Claude"\ncontext_window = 200000\n'
    )
    config = parse_args(["--config", str(path), *LOCAL, "--model", "local"])
    assert [m.id for p in config.providers for m in p.models] == ["claude", "local"]
    assert config.max_model_calls == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("providers = [", "not valid TOML", id="bad-toml"),
        pytest.param("[[providers]]\nkind = 'openai-chat'\n", "models", id="no-models"),
        pytest.param(
            "[[providers]]\nkind = 'anthropic'\nbase_ur = 'x'\n[[providers.models]]\nid = 'm'\n",
            "base_ur: Extra inputs are not permitted",
            id="typo-is-an-error",
        ),
        pytest.param(
            "[[providers]]\nkind = 'anthropic'\napi_version = 'v1'\n[[providers.models]]\nid='m'\n",
            "api_version applies to kind = 'google' only",
            id="api-version-outside-google",
        ),
    ],
)
def test_bad_file_says_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "riacho.toml"
    path.write_text(text)
    with pytest.raises(SettingsError, match=message):
        load_file(path)


def test_missing_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="cannot read"):
        load_file(tmp_path / "nope.toml")
