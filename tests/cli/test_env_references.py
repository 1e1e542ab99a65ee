"""``os.environ/NAME`` and ``${NAME}`` resolve in every string setting, once, at load.

Before, they worked in secrets only: ``telemetry: {url: os.environ/DATABASE_URL}``
made a SQLite file named ``os.environ/DATABASE_URL``, ``state.url:
redis://${REDIS_HOST}:6379/5`` was taken as written, and ``check`` passed both.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from laneway.cli import serve
from laneway.cli.main import main
from laneway.config import load_config
from laneway.config.models import Secret
from laneway.config.secrets import configured_secrets
from laneway.core.errors import ConfigError

SOURCE = "{base_url: 'http://127.0.0.1:1/v1', model: m}"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "laneway.yaml"
    path.write_text(f"lanes:\n  a:\n    sources: [{SOURCE}]\n{text}")
    return path


def test_urls_hosts_and_paths_resolve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LW_T_DATABASE_URL", "postgresql://lw:s3cret-pw@127.0.0.1:5432/test")
    monkeypatch.setenv("LW_T_REDIS_HOST", "127.0.0.1")
    monkeypatch.setenv("LW_T_SPOOL", "/var/lib/laneway")
    path = write(
        tmp_path,
        "telemetry: {url: os.environ/LW_T_DATABASE_URL, spool_dir: '${LW_T_SPOOL}/spool'}\n"
        "state: {url: 'redis://${LW_T_REDIS_HOST}:6379/5'}\n"
        "server: {host: os.environ/LW_T_REDIS_HOST}\n",
    )
    config, environ = load_config(path)
    assert config.telemetry.url == "postgresql://lw:s3cret-pw@127.0.0.1:5432/test"
    assert config.telemetry.spool_dir == "/var/lib/laneway/spool"
    assert config.state.url == "redis://127.0.0.1:6379/5"
    assert config.server.host == "127.0.0.1"
    assert "s3cret-pw" in configured_secrets(config, environ)


def test_a_dotenv_beside_the_file_resolves_them(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("LW_T_DOTENV_HOST=127.0.0.2\n")
    config, _ = load_config(write(tmp_path, "state: {url: 'redis://${LW_T_DOTENV_HOST}:6379'}\n"))
    assert config.state.url == "redis://127.0.0.2:6379"


def test_secrets_keep_their_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LW_T_KEY", "sk-value")
    path = tmp_path / "laneway.yaml"
    path.write_text(
        "lanes:\n  a:\n    sources:\n"
        "      - {base_url: 'http://127.0.0.1:1/v1', model: m, api_key: os.environ/LW_T_KEY}\n"
        "server: {keys: [{name: k, key: '${LW_T_KEY}'}]}\n"
    )
    config, _ = load_config(path)
    assert config.lanes["a"].sources[0].api_key == Secret(env="LW_T_KEY")
    assert config.server.keys[0].key == Secret(env="LW_T_KEY")


def test_an_unset_reference_is_refused_with_file_line_and_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("LW_T_UNSET_DB", raising=False)
    monkeypatch.delenv("LW_T_UNSET_HOST", raising=False)
    path = write(
        tmp_path,
        "telemetry:\n  url: os.environ/LW_T_UNSET_DB\n"
        "state:\n  url: 'redis://${LW_T_UNSET_HOST}:6379/5'\n",
    )
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert f"{path}:5: telemetry.url: os.environ/LW_T_UNSET_DB: LW_T_UNSET_DB is not set" in str(
        raised.value
    )
    assert f"{path}:7: state.url: ${{LW_T_UNSET_HOST}}" in str(raised.value)
    assert main(["check", str(path)]) == 1
    checked = capsys.readouterr().err
    assert "telemetry.url" in checked and "state.url" in checked
    assert serve.main(["--config", str(path), "--port", "0"]) == 1
    assert capsys.readouterr().err == checked
    assert not (tmp_path / "os.environ").exists()


@pytest.mark.parametrize(
    ("setting", "driver"),
    [
        ("state: {url: 'redis://127.0.0.1:6379/0'}", "redis"),
        ("cache: {url: 'redis://127.0.0.1:6379/0'}", "redis"),
        ("telemetry: {url: 'postgresql://127.0.0.1:5432/test'}", "asyncpg"),
    ],
)
def test_check_and_serve_refuse_a_missing_driver_alike(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    setting: str,
    driver: str,
) -> None:
    """Before, ``check`` exited 0 where ``serve`` refused: one verdict, ``drivers_needed``."""
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == driver else real(name, *a)
    )
    path = write(tmp_path, setting + "\n")
    assert main(["check", str(path)]) == 1
    checked = capsys.readouterr().err
    assert f"needs the {driver} driver, which is not installed" in checked
    assert serve.main(["--config", str(path), "--port", "0"]) == 2  # serve's refusal status
    assert capsys.readouterr().err == checked
