"""``tao plugins``: the backends and tool sets other packages installed, and whether each loads.

    tao plugins          # NAME  GROUP  DISTRIBUTION  VERSION  STATUS
    tao plugins --json   # [{"name", "group", "distribution", "version", "loads", "error"}]

Each plugin is loaded as a run would load it (its module imported, its object checked; a
tool set's tools made), so a broken or refused one shows its one-line reason here first.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from tao.cli.terminal import echo, echo_json
from tao.errors import TaoError
from tao.models.backends import BY_PREFIX
from tao.plugins import MODELS, TOOLS, Plugin, installed, load, refusal, unreadable
from tao.state.jsontypes import JSONObject
from tao.tools.registry import TOOL_SETS, ToolSetContext, plugin_tools


def problem(plugin: Plugin, others: list[Plugin]) -> str | None:
    """Why the plugin cannot be used (one line), or ``None`` when it loads."""
    builtins = list(BY_PREFIX if plugin.group == MODELS else TOOL_SETS)
    reason = refusal(plugin, builtins, others)
    if reason is not None:
        return reason
    try:
        found = load(plugin)
        if plugin.group == TOOLS:
            plugin_tools(plugin, found, ToolSetContext(Path.cwd()))
        elif not callable(found):
            return f"{plugin.label()} gave {found!r}, not a callable that makes a model"
    except TaoError as error:
        return str(error)
    return None


@click.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array instead of a table.")
def plugins_command(as_json: bool) -> None:
    """List the model backends (tao.models) and tool sets (tao.tools) other packages add.

    A distribution whose entry points cannot be read at all is listed too, as a row named
    ``?`` with the reason, since it is why a plugin of it is missing.
    """
    found = installed()
    rows = [
        (plugin, problem(plugin, [p for p in found if p.group == plugin.group])) for plugin in found
    ]
    broken = unreadable()
    if as_json:
        listed: list[JSONObject] = [
            {
                "name": plugin.name,
                "group": plugin.group,
                "distribution": plugin.distribution,
                "version": plugin.version,
                "value": plugin.value,
                "loads": reason is None,
                "error": reason,
            }
            for plugin, reason in rows
        ]
        listed += [{"name": None, "loads": False, "error": line} for line in broken]
        echo_json(json.dumps(listed, indent=2))
        return
    if not rows and not broken:
        echo(
            "no plugins installed: a package adds model backends and tool sets through the "
            f"{MODELS!r} and {TOOLS!r} entry points (README: Plugins)"
        )
        return
    table = [("NAME", "GROUP", "DISTRIBUTION", "VERSION", "STATUS")]
    for plugin, reason in rows:
        status = "ok" if reason is None else reason.removeprefix(f"{plugin.label()} ")
        table.append((plugin.name, plugin.group, plugin.distribution, plugin.version, status))
    table += [("?", "?", "?", "?", line) for line in broken]
    widths = [max(len(row[column]) for row in table) for column in range(4)]
    for row in table:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        echo("  ".join([*cells, row[4]]))
