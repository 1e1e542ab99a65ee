"""``laneway simulate --faults`` end to end on a few rows, ten times faster than real time.

The rows' verdicts are the e2e tests' business (``tests/server/test_faults.py``);
here the command runs, reports progress, renders the table and writes its JSON.
"""

from __future__ import annotations

import json

from laneway.cli.main import main
from laneway.sim import RunningSim

ROWS = ["server_error_once", "connection_refused", "content_filter"]


def test_simulate_faults_renders_the_chosen_rows(sim: RunningSim, capsys, tmp_path) -> None:
    report = tmp_path / "faults.json"
    argv = ["simulate", "--faults", *ROWS, "--scale", "0.1", "--sim", sim.base_url]
    assert main([*argv, "--json", str(report)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert sum(line.startswith("[") and "/3]" in line for line in out) == 3
    header = next(line for line in out if line.startswith("fault on the primary"))
    assert "requests primary/fallback" in header and header.endswith("verdict")
    row = next(line for line in out if line.startswith("refuses the connection"))
    assert "fallback answer, complete" in row and "refused / 1" in row
    figures = json.loads(report.read_text())
    assert figures["scale"] == 0.1
    assert [r["scenario"] for r in figures["rows"]] == ROWS
    filtered = figures["rows"][2]
    assert filtered["answers"][0]["status"] == 400
    assert filtered["hits"] == {"primary": 1, "fallback": 0}


def test_unknown_fault_is_an_error(capsys) -> None:
    assert main(["simulate", "--faults", "nope"]) == 2
    assert "unknown fault(s) nope" in capsys.readouterr().err


def test_scale_must_be_positive(capsys) -> None:
    assert main(["simulate", "--faults", "--scale", "0"]) == 2
    assert "--scale must be positive" in capsys.readouterr().err
