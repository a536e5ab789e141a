"""``tao ui [--port N]``: browse runs and decide on pending approvals in a browser (SPEC M3).

    tao ui                # http://127.0.0.1:8765/
    tao ui --port 0       # any free port

Serves on 127.0.0.1 only, from the same run log as ``tao runs`` (SQLite in
$TAO_HOME, or PostgreSQL with TAO_DATABASE_URL). Ctrl+C stops it; runs it
resumed keep going.
"""

from __future__ import annotations

import errno

import click

from tao.cli.terminal import echo
from tao.errors import StoreError
from tao.store.factory import open_store

DEFAULT_PORT = 8765


@click.command("ui")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="Port on 127.0.0.1 (0: any free port).",
)
def ui(port: int) -> None:
    """Serve the run log and pending approvals as a local web page (127.0.0.1 only)."""
    from tao.ui import UiServer

    try:
        store = open_store()
    except StoreError as error:
        raise click.ClickException(str(error)) from None
    try:
        server = UiServer(store, port)
    except OSError as error:
        store.close()
        if error.errno == errno.EADDRINUSE:
            raise click.ClickException(
                f"port {port} is already in use; choose another with --port (0: any free port)"
            ) from None
        raise click.ClickException(f"cannot listen on 127.0.0.1:{port}: {error}") from None
    echo(f"tao ui: {server.url}  (run log {store.where}; Ctrl+C to stop)", err=True)
    echo(server.url)
    try:
        server.serve_forever()
    finally:
        store.close()
