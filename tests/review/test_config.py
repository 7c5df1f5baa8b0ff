"""Review mode's setting in `.system/desk.json`: the policy it reads, and the gate's findings on bad values."""

from __future__ import annotations

import json
import subprocess

import pytest

from desk.config import DeskConfig, load_config
from desk.errors import InvalidFileError
from desk.layout import DeskFolder
from tests.conftest import git

ID = "desk-" + "0" * 32


def test_without_review_every_write_is_direct() -> None:
    config = DeskConfig(desk_id=ID)
    assert all(config.review_mode(t, op) == "direct" for t in ("fact", None) for op in ("create", "forget"))
    assert "review" not in json.loads(config.to_bytes())  # a desk without the setting is written as before


def test_type_setting_wins_and_missing_operations_follow_star() -> None:
    config = DeskConfig.model_validate({"desk_id": ID, "review": {"*": "propose", "preference": {"update": "direct"}}})
    assert config.review_mode("preference", "update") == "direct"
    assert config.review_mode("preference", "create") == "propose"
    assert config.review_mode("fact", "forget") == "propose"
    assert DeskConfig.model_validate({"desk_id": ID, "review": {"fact": "propose"}}).review_mode("decision", "create") == "direct"


def _write(desk: DeskFolder, review: object) -> bytes:
    data = json.loads(desk.read(".system/desk.json"))
    data["review"] = review
    text = json.dumps(data, indent=2).encode()
    desk.path(".system/desk.json").write_bytes(text)
    return text


def test_bad_values_are_named_at_their_line(desk: DeskFolder) -> None:
    text = _write(desk, {"*": "propose", "preference": {"update": "drect"}, "fact": "maybe\n", "bogus": "direct"})
    lines = text.decode().split("\n")
    with pytest.raises(InvalidFileError) as caught:
        load_config(desk.root)
    found = {f.message.split(":")[0]: f.line for f in caught.value.findings}
    assert found == {"review.preference.update": next(i for i, l in enumerate(lines, 1) if '"update"' in l),
                     "review.fact": next(i for i, l in enumerate(lines, 1) if '"fact"' in l),
                     "review.bogus": next(i for i, l in enumerate(lines, 1) if '"bogus"' in l)}


def test_the_commit_hook_refuses_a_bad_review_setting(desk: DeskFolder, identity: None) -> None:
    _write(desk, {"fact": {"delete": "propose"}})
    git(desk.root, "add", ".system/desk.json")
    proc = subprocess.run(["git", "commit", "-q", "-m", "review"], cwd=desk.root, capture_output=True, text=True)
    assert proc.returncode != 0
    assert "review.fact.delete" in proc.stderr + proc.stdout
    _write(desk, {"fact": {"forget": "propose"}})
    git(desk.root, "add", ".system/desk.json")
    subprocess.run(["git", "commit", "-q", "-m", "review"], cwd=desk.root, check=True)
    assert load_config(desk.root).review_mode("fact", "forget") == "propose"


def test_a_live_desk_reads_a_changed_desk_json(desk: DeskFolder) -> None:
    """A long-running `desk ui` or `desk serve` keeps one Desk: a person turning review mode on in
    .system/desk.json is seen by the next read of `config`, even with the same size and the file
    replaced (a new inode) or rewritten in place."""
    live = DeskFolder(desk.root)
    assert not live.config.review
    _write(desk, {"*": "propose"})
    assert live.config.review_mode("fact", "create") == "propose"
    text = desk.read(".system/desk.json").replace(b'"propose"', b'"direct" ')  # the same size
    desk.path(".system/desk.json").write_bytes(text)
    assert live.config.review_mode("fact", "create") == "direct"
    assert live.config is live.config  # unchanged: not read again
