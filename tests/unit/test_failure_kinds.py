"""``FailureKind`` is the one list of attempt failures: documented, stable, checked by config."""

from __future__ import annotations

import ast
import inspect
import itertools
import re
from pathlib import Path

import pytest

from laneway.config.load import parse_config
from laneway.core import failures
from laneway.core.errors import AttemptFailure, ConfigError, Inexpressible
from laneway.core.failures import RETRY_CLASSES, FailureKind, parse_retry_class

DOCS = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_values_are_the_strings_telemetry_has_always_written() -> None:
    assert [kind.value for kind in FailureKind] == [
        "timeout",
        "connect",
        "empty",
        "cut",
        "status",
        "rejected",
        "context_length",
        "malformed",
        "too_large",
        "dimension",
        "unsupported",
        "diverged",
        "deadline",
    ]
    assert f"{FailureKind.CUT}" == "cut" and str(FailureKind.CUT) == "cut"


def test_every_member_has_its_own_docstring() -> None:
    tree = ast.parse(inspect.getsource(failures))
    enum_class = next(
        node
        for node in tree.body
        if isinstance(node, ast.ClassDef) and node.name == FailureKind.__name__
    )
    documented = set()
    body = enum_class.body
    for statement, following in itertools.pairwise(body):
        if (
            isinstance(statement, ast.Assign)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            target = statement.targets[0]
            assert isinstance(target, ast.Name)
            documented.add(target.id)
    assert documented == {kind.name for kind in FailureKind}


def test_the_docs_table_lists_every_kind_in_order() -> None:
    text = DOCS.read_text()
    section = text.split("## Failure kinds", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.MULTILINE)
    assert listed == [kind.value for kind in FailureKind]


def test_label_is_the_status_for_http_answers_and_the_kind_otherwise() -> None:
    assert AttemptFailure(FailureKind.STATUS, "x", status=503).label == "503"
    assert AttemptFailure(FailureKind.REJECTED, "x", status=400).label == "400"
    assert AttemptFailure(FailureKind.CONTEXT_LENGTH, "x", status=400).label == "400"
    assert AttemptFailure(FailureKind.TIMEOUT, "x").label == "timeout"
    assert type(AttemptFailure(FailureKind.TIMEOUT, "x").label) is str
    assert Inexpressible("tools", "no tools here").kind is FailureKind.UNSUPPORTED


def test_retry_classes_parse_and_others_are_refused_by_name() -> None:
    assert {parse_retry_class(kind.value) for kind in RETRY_CLASSES} == RETRY_CLASSES
    with pytest.raises(ValueError, match=r"'timout' is not a failure kind.*timeout, connect"):
        parse_retry_class("timout")
    with pytest.raises(ValueError, match="'rejected' is a failure kind retry_on cannot name"):
        parse_retry_class("rejected")


def _lane(retry_on: str) -> str:
    return f"""
lanes:
  a:
    retries: 2
    retry_on: {retry_on}
    sources:
      - {{provider: openai, model: m, base_url: "http://127.0.0.1:9/v1", api_key: x}}
"""


@pytest.mark.parametrize("retry_on", ["[503, timout]", "{timout: 1}"])
def test_config_names_a_misspelt_retry_class(retry_on: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(_lane(retry_on))
    message = str(err.value)
    assert "lanes.a.retry_on: 'timout' is not a failure kind" in message
    assert "timeout, connect, empty, cut" in message
    assert message.count("retry_on") == 1


def test_config_reads_retry_classes_as_kinds() -> None:
    lane = parse_config(_lane("[503, timeout, cut]")).lanes["a"]
    assert lane.retry_on == [503, FailureKind.TIMEOUT, FailureKind.CUT]
    counted = parse_config(_lane("{503: 2, connect: 1}")).lanes["a"]
    assert counted.retry_on == {503: 2, FailureKind.CONNECT: 1}
