"""`desk ui`: the local review page (desk.ui), served on 127.0.0.1 with a token in its URL."""

from __future__ import annotations

import click

from desk.cli.output import invocation
from desk.errors import DeskError


@click.command("ui")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="The port on 127.0.0.1 (0: any free one).")
@click.option("--no-open", is_flag=True, help="Print the URL only; do not open a browser.")
def ui_command(port: int, no_open: bool) -> None:
    """Open the local review page: memories, history with diffs, the context preview, the
    timeline with the desk's health, and conflict cases.

    It listens on 127.0.0.1 only and prints a URL with a random token; a request without it is
    refused (403), as is one from another Host or Origin and a form without its CSRF token. Writes
    go through the same gate as the CLI, one commit each with `Desk-Client: ui`. Stop it with
    Ctrl-C. Needs the `ui` extra: pip install 'desk[ui]'.
    """
    import secrets
    import socket
    import webbrowser

    desk = invocation().desk()
    try:
        import uvicorn

        from desk.ui.app import build_app, warm_up
    except ImportError as exc:
        from desk.ui import UI_MISSING_HINT

        raise DeskError(f"desk ui needs its extra, which is not installed ({exc})", hint=UI_MISSING_HINT) from None
    sock = socket.socket()
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(128)  # connections made before the server runs wait for it instead of failing
    except OSError as exc:
        raise DeskError(f"cannot listen on 127.0.0.1:{port} ({exc.strerror})", hint="pick another --port") from None
    port = sock.getsockname()[1]
    token = secrets.token_urlsafe(32)
    app = build_app(desk, token=token, csrf=secrets.token_urlsafe(32), port=port)
    warm_up(desk)
    url = f"http://127.0.0.1:{port}/?token={token}"
    click.echo(f"desk ui: {url}\n(Ctrl-C stops it)", err=True)
    if not no_open:
        webbrowser.open(url)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


COMMANDS = [ui_command]
