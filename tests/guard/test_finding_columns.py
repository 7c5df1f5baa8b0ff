"""Where in the line a finding is: the gate's findings carry a 1-based column where the rule knows
it (YAML marks, NUL and bad UTF-8 bytes, invisible direction controls, secrets, desk.json's JSON),
in `--json` and in the verdicts cache alike (a second run reads the cached verdict)."""

from __future__ import annotations

import json

import pytest

from desk.errors import InvalidFileError
from desk.storage.frontmatter import parse
from tests.conftest import DeskRunner


@pytest.mark.parametrize(("data", "line", "column", "rule"), [
    (b"---\nname: &a x\n---\nbody\n", 2, 7, "yaml-alias"),
    (b"---\nname: [\xc3\xa9, &a x]\n---\nbody\n", 2, 11, "yaml-alias"),  # characters, not bytes
    (b"---\nname: a\nname: b\n---\n", 3, 1, "yaml-duplicate-key"),
    (b"---\nname: a\n---\nab\0c\n", 4, 3, "binary"),
    (b"---\nname: \xff\n---\n", 2, 7, "encoding"),
    (b"---\nname: \xc3\xa9\xff\n---\n", 2, 8, "encoding"),
])
def test_frontmatter_findings_name_the_column(data: bytes, line: int, column: int, rule: str) -> None:
    with pytest.raises(InvalidFileError) as caught:
        parse(data, "memory/x.md")
    [finding] = caught.value.findings
    assert (finding.line, finding.column, finding.rule) == (line, column, rule)
    assert finding.to_json()["column"] == column


def write_memory(root: object, body: str) -> None:
    from pathlib import Path

    path = Path(str(root)) / "memory" / "cols.md"
    path.write_text("---\nname: cols\ndescription: Columns\ntype: fact\ntriggers: [cols]\n---\n" + body, "utf-8")


def findings(run: DeskRunner) -> list[dict[str, object]]:
    result = run("validate", "--all", "--json")
    assert result.exit_code == 3, result.output
    return [f for f in json.loads(result.output)["findings"] if f["path"] == "memory/cols.md"]


def test_a_secret_and_a_direction_control_are_placed_in_their_line(run: DeskRunner) -> None:
    key = "AKIA" + "QWERTYUIOPASDFGH"
    write_memory(run.root, f"The key is {key} here.\n")
    [secret] = findings(run)
    assert (secret["rule"], secret["line"], secret["column"]) == ("secret", 7, len("The key is ") + 1)
    assert findings(run) == [secret]  # the cached verdict keeps the column
    write_memory(run.root, "Plain text, then \u202e reversed.\n")
    [control] = findings(run)
    assert (control["rule"], control["line"], control["column"]) == ("bidi-control", 7, len("Plain text, then ") + 1)


def test_a_json_mistake_in_desk_json_names_its_column(run: DeskRunner) -> None:
    config = run.root / ".system" / "desk.json"
    config.write_text('{\n  "schema_version": 1,\n  "x": tru\n}\n', "utf-8")
    result = run("validate", "--all", "--json")
    [finding] = [f for f in json.loads(result.output)["findings"] if f["path"] == ".system/desk.json"]
    assert (finding["line"], finding["column"]) == (3, 8)
