"""`laneway check`: the lane table, the warnings, and the exit status."""

from __future__ import annotations

from pathlib import Path

import pytest

from laneway.cli.main import main

EXAMPLE = Path(__file__).parents[2] / "examples" / "laneway.yaml"


def test_check_runs_on_the_example(capsys, monkeypatch) -> None:
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    assert main(["check", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "engram-summarize  chat   3         8s           1s, 1s" in out
    assert "OPENROUTER_API_KEY is unset" in out
    assert main(["check", "--strict", str(EXAMPLE)]) == 1


def write(tmp_path: Path, lane: str) -> str:
    path = tmp_path / "laneway.yaml"
    path.write_text(
        "lanes:\n  x:\n" + lane + "    sources: [{base_url: 'http://127.0.0.1:1/v1', model: m}]\n"
    )
    return str(path)


def test_warns_when_retries_cannot_fit(tmp_path, capsys) -> None:
    lane = "    deadline: 10s\n    attempt_timeout: 6s\n    retries: 2\n    retry_on: [503]\n"
    assert main(["check", write(tmp_path, lane)]) == 0
    out = capsys.readouterr().out
    assert "retry 2 can never start" in out


def test_warns_when_client_deadline_is_shorter(tmp_path, capsys) -> None:
    lane = "    deadline: 40s\n    client_deadline: 30s\n"
    main(["check", write(tmp_path, lane)])
    out = capsys.readouterr().out
    assert "client_deadline 30s is shorter than the lane's worst case 40s" in out


def test_errors_exit_non_zero(tmp_path, capsys) -> None:
    assert main(["check", write(tmp_path, "    retrys: 2\n")]) == 1
    assert "lanes.x.retrys: unknown key" in capsys.readouterr().err


@pytest.mark.parametrize("missing", ["nope.yaml"])
def test_missing_file(missing, capsys) -> None:
    assert main(["check", missing]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_warns_when_sources_differ_in_what_they_can_carry(tmp_path, capsys) -> None:
    path = tmp_path / "laneway.yaml"
    path.write_text(
        "lanes:\n  x:\n    sources:\n"
        "      - {name: main, base_url: 'http://127.0.0.1:1/v1', model: m}\n"
        "      - {name: spare, provider: anthropic, base_url: 'http://127.0.0.1:1/v1', "
        "model: c, max_tokens: 100}\n"
        "  same:\n    sources:\n"
        "      - {base_url: 'http://127.0.0.1:1/v1', model: m}\n"
        "      - {provider: azure, base_url: 'http://127.0.0.1:1', model: d}\n"
    )
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert (
        "x: sources differ in what they can carry: spare cannot carry n > 1, seed, logprobs" in out
    )
    assert "main cannot carry" not in out and "same: sources differ" not in out
