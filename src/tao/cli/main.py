"""Entry point of the ``tao`` command; each sub-command lives in its own module."""

from __future__ import annotations

import click

from tao.cli.approve import approve_command, deny_command, resume_command
from tao.cli.eval import eval_group
from tao.cli.plugins import plugins_command
from tao.cli.queue import submit_command, wait_command, worker
from tao.cli.run import run
from tao.cli.runs import runs
from tao.cli.serve import serve
from tao.cli.terminal import EscapingGroup
from tao.cli.ui import ui


@click.group(cls=EscapingGroup, help="ReAct agents: Thought, Action, Observation.")
@click.version_option(package_name="tao")
def main() -> None:
    """Group every sub-command under ``tao``."""


main.add_command(eval_group)
main.add_command(run)
main.add_command(runs)
main.add_command(resume_command)
runs.add_command(approve_command)
runs.add_command(deny_command)
main.add_command(serve)
main.add_command(ui)
main.add_command(plugins_command)
main.add_command(submit_command(run.params))
main.add_command(worker)
runs.add_command(wait_command)

if __name__ == "__main__":
    main()
