from desk.desk import Desk

from tests.conftest import DeskRunner, git


def test_remember_creates_one_commit(desk: Desk, run: DeskRunner) -> None:
    before = git(desk.root, "rev-list", "--count", "HEAD")
    result = run("remember", "report-style", "--type", "preference", "-d", "Report style",
                 "Reports in Chinese.")
    assert result.exit_code == 0, result.output
    assert int(git(desk.root, "rev-list", "--count", "HEAD")) == int(before) + 1
