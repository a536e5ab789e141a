"""``tao serve``: the embedded model behind an OpenAI-compatible API (SPEC M5, L3).

tao serve --model local --port 8000
tao run "What is 17 * 23 + 4?" --model openai:local --base-url http://127.0.0.1:8000/v1
"""

from __future__ import annotations

import click

from tao.cli.terminal import echo
from tao.cli.usage import cli_error
from tao.errors import TaoError


@click.command()
@click.option(
    "-m",
    "--model",
    "model_spec",
    default="local",
    show_default=True,
    help="local, local:PATH.gguf, or NAME:SPEC of a plugin (tao plugins)",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind; the default accepts connections from this machine only.",
)
@click.option(
    "--port",
    type=click.IntRange(min=0, max=65535),
    default=8000,
    show_default=True,
    help="Port to listen on (0 picks a free one and prints it).",
)
@click.option(
    "--n-ctx",
    type=click.IntRange(min=512),
    default=None,
    help="Context window in tokens (default 8192).",
)
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=None,
    help="CPU threads (default: all available cores).",
)
@click.option(
    "--max-queue",
    default=8,
    show_default=True,
    type=click.IntRange(min=0, max=1000),
    help="Requests that may wait for the model; more are answered 429 with Retry-After.",
)
@click.option("--quiet", is_flag=True, help="Do not log each request.")
@click.option(
    "--queue",
    metavar="NAME",
    help="Also take agent runs (POST /v1/runs) for this queue of workers (tao worker).",
)
def serve(
    model_spec: str,
    host: str,
    port: int,
    n_ctx: int | None,
    threads: int | None,
    max_queue: int,
    quiet: bool,
    queue: str | None,
) -> None:
    """Serve a local model at /v1/models and /v1/chat/completions.

    Answers only requests addressed to 127.0.0.1, localhost, [::1] or --host, takes
    POSTs only as application/json, and runs one model call at a time.
    """
    from pathlib import Path

    from tao.models import Model, load_model
    from tao.models.backends import BY_PREFIX
    from tao.models.local import DEFAULT_N_CTX, LocalModel
    from tao.server import serve_forever

    kind, _, rest = model_spec.strip().partition(":")
    if kind != "local" and kind in BY_PREFIX:  # a provider's API is not ours to serve
        raise click.UsageError(f"only local models can be served, got {model_spec!r}")
    try:
        if kind == "local":
            model: Model = LocalModel(
                Path(rest).expanduser() if rest else None,
                n_ctx=n_ctx or DEFAULT_N_CTX,
                n_threads=threads,
            )
        else:  # a plugin's model (tao plugins): the server answers with whatever it is
            model = load_model(model_spec)
    except TaoError as error:
        raise cli_error(error) from error
    if host in ("0.0.0.0", "::"):  # noqa: S104 - words about a bind, not a bind
        echo(
            f"note: listening on {host}, but only requests addressed to 127.0.0.1, localhost "
            "or [::1] are answered; to serve other machines, bind the address they use",
            err=True,
        )
    elif host not in ("127.0.0.1", "localhost", "::1"):
        echo(f"warning: listening on {host}; anyone who can reach it can use the model", err=True)
    try:
        serve_forever(model, host, port, quiet=quiet, max_waiting=max_queue, queue=queue)
    except OSError as error:
        raise click.ClickException(f"cannot listen on {host}:{port}: {error.strerror}") from None
