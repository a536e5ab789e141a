"""The one way text reaches the terminal from ``tao``'s commands (SPEC S9).

Task text, model names, thoughts, observations, tool names, errors and run-log
rows are all untrusted: an ``ESC [2J`` clears the screen, ``ESC ]52;…`` writes the
clipboard, ``ESC ]8;;…`` hides a link, U+202E reorders what is shown, U+009B is a
one-byte CSI. Every command prints through this module, and this module sends
every character through :func:`tao.format.terminal_safe`, the only escaping
function:

- :func:`console` gives a rich console whose every rendered segment is escaped
  (rich's own styling is added after, as control codes, so colours still work);
- :func:`echo` prints a line of plain text, escaped;
- :func:`echo_json` prints JSON with the invisible and C1 characters written as
  ``\\uXXXX`` escapes: the same JSON value, nothing a terminal acts on;
- :class:`EscapingGroup` escapes click's own error messages (``No such option:
  --<ESC>…``) and every ``Error: …`` a command raises.

``tests/cli/test_terminal.py`` checks that no other module of ``tao.cli`` builds
a console or prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import click
from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment

from tao.format import TERMINAL_ESCAPES, terminal_safe
from tao.redact.known import remember_environment
from tao.redact.scan import redact

__all__ = ["EscapingGroup", "SafeConsole", "console", "echo", "echo_json", "json_safe"]


class SafeConsole(Console):
    """A rich console that escapes the text of every segment it renders.

    Renderers nest (a table renders its cells through the console), so an inner
    segment may be looked at twice; escaping is idempotent, since its output holds
    no control character. Control segments (cursor moves of a live display) are
    rich's own and pass unchanged.
    """

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        return _escaped(super().render(renderable, options))


def _escaped(segments: Iterable[Segment]) -> Iterator[Segment]:
    for segment in segments:
        if segment.control or not segment.text:
            yield segment
            continue
        text = terminal_safe(segment.text)
        yield segment if text == segment.text else Segment(text, segment.style)


def console(*, stderr: bool = False, **options: Any) -> SafeConsole:
    """The console every command prints rich output with; ``highlight`` is off so numbers
    and paths in model text keep their plain colour."""
    options.setdefault("highlight", False)
    return SafeConsole(stderr=stderr, **options)


def echo(message: str = "", *, err: bool = False, nl: bool = True) -> None:
    """``click.echo`` of plain text, every control character escaped."""
    click.echo(terminal_safe(message), err=err, nl=nl)


_JSON_ESCAPES = {code: f"\\u{code:04x}" for code in TERMINAL_ESCAPES}


def json_safe(text: str) -> str:
    """JSON text with every character a terminal could act on written as ``\\uXXXX``.

    Such characters can only stand inside JSON strings, where the escape means the
    same character: the value is unchanged, the bytes are inert.
    """
    return text.translate(_JSON_ESCAPES)


def echo_json(text: str, *, err: bool = False) -> None:
    """Print JSON text (``--json``, ``runs export``) with :func:`json_safe`."""
    click.echo(json_safe(text), err=err)


class EscapingGroup(click.Group):
    """The ``tao`` group: click's errors, and the commands' ``Error: …`` lines, escaped.

    Click writes a :class:`click.ClickException` itself; its message may quote what
    was typed (an option name) or what a run log holds (a task in an error).
    """

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.ClickException as error:
            _escape(error)
            raise

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as error:
            _escape(error)
            raise


def _escape(error: click.ClickException) -> None:
    # ``message`` is typed Final by click; it is a plain attribute, and click's ``show``
    # (and ``format_message`` of every subclass) reads it. It may quote a bad argument
    # verbatim (``--max-steps ghp_…``: "… is not a valid integer"), so it is redacted too;
    # a usage error may come before a run registers tao's secret-named variables.
    remember_environment(())
    vars(error)["message"] = terminal_safe(redact(error.message))
