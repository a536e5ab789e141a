"""Entry point of the ``tao`` command; each sub-command lives in its own module."""

from __future__ import annotations

import click

from tao.cli.run import run
from tao.cli.runs import runs
from tao.cli.serve import serve


@click.group(help="ReAct agents: Thought, Action, Observation.")
@click.version_option(package_name="tao")
def main() -> None:
    """Group every sub-command under ``tao``."""


main.add_command(run)
main.add_command(runs)
main.add_command(serve)

if __name__ == "__main__":
    main()
