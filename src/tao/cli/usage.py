"""Exit code 2 for every usage error, in every command, decided in one place.

The rule a script can rely on:

- **2**: the command line is wrong: an unknown option, a value out of range, flags that
  cannot go together, or a name on it (model spec, tool set, file, folder, run id) that
  does not exist or cannot be used as what it must be, or a run another process is
  acting for now (its lease, SPEC R5: wait, or stop that process). Nothing was done.
- **1**: the command was right but something failed: a missing API key or package,
  an unreachable server, a corrupt run log, a run in a state that cannot go on.

Click gives 2 for its own checks (``--max-steps 0``); tao's errors get it through
:func:`cli_error`, so no command can drift back to 1 for a typo.

    except TaoError as error:
        raise cli_error(error) from None
"""

from __future__ import annotations

import click

from tao.errors import (
    ConfigError,
    ModelSpecError,
    RunBusyError,
    TaoError,
    UnknownRunError,
    UnknownToolSetError,
)

#: tao's errors that mean "what you typed is wrong", not "something failed".
USAGE_ERRORS = (ModelSpecError, UnknownToolSetError, ConfigError, UnknownRunError, RunBusyError)


class UsageProblem(click.ClickException):
    """A usage error tao found (a run id that names no run): one ``Error:`` line, exit 2.

    Click's own :class:`click.UsageError` also prints the usage, which says nothing
    more here: tao's message already names the fix (``see `tao runs list```).
    """

    exit_code = 2


def cli_error(error: TaoError) -> click.ClickException:
    """The click exception for ``error``: a usage error (exit 2) or a failure (exit 1)."""
    if isinstance(error, USAGE_ERRORS):
        return UsageProblem(str(error))
    return click.ClickException(str(error))
