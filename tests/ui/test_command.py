"""`desk ui` as a command: a port already taken is an error naming it, with nothing started."""

from __future__ import annotations

import socket

from desk.layout import DeskFolder
from tests.conftest import DeskRunner


def test_a_taken_port_is_an_error_naming_it(desk: DeskFolder, run: DeskRunner) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = run("ui", "--port", str(port), "--no-open")
    assert result.exit_code == 1 and f"cannot listen on 127.0.0.1:{port}" in result.output


def test_the_port_must_be_a_port(desk: DeskFolder, run: DeskRunner) -> None:
    assert run("ui", "--port", "70000", "--no-open").exit_code == 2
