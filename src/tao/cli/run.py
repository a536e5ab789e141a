"""``tao run TASK``: one agent run from the shell, shown live or printed as JSON (SPEC M1, M2)."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypedDict, Unpack

import click

from tao.cli.ending import Latest, conclude, failed, interrupted, sigterm_interrupts
from tao.cli.options import base_url_option, model_option, shown
from tao.errors import ConfigError, ModelSpecError, TaoError, ToolError
from tao.events import ApprovalEvent, Event, FinalEvent, ObservationEvent, TextDelta
from tao.format import format_call, terminal_safe
from tao.jsontypes import JSONObject
from tao.output import schema_of
from tao.protocol.labels import LABELS
from tao.redact import redact
from tao.state import RunConfig
from tao.tools.base import Tool
from tao.trace import RunObserver, RunResult

#: Kept in step with tao.tools.registry.TOOL_SETS by a test; importing it would load pydantic.
TOOL_SET_NAMES = "calc, files, tests, wiki, write, human"

if TYPE_CHECKING:
    from tao.agent import Agent
    from tao.tools.mcp import McpServer


def show_live(
    agent: Agent,
    task: str,
    events: Iterator[Event] | None = None,
    observers: Sequence[RunObserver] = (),
) -> RunResult:
    """Print the model's text as it streams, then each finished step, the answer last."""
    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

    from tao.cli.render import render_result_footer, render_step

    console = Console(highlight=False)
    console.print(
        Text.assemble(
            ("tao ", "bold cyan"), (agent.model.name, "cyan"), "  ", (terminal_safe(task), "bold")
        )
    )
    lang = agent.labels.code
    events = events if events is not None else agent.stream(task, observers=observers)
    streamed = ""
    with Live(Text(""), console=console, auto_refresh=False, transient=True) as live:
        for event in events:
            if isinstance(event, TextDelta):
                streamed += terminal_safe(event.text)
                live.update(Text(redact(streamed), style="dim"), refresh=True)
            elif isinstance(event, ObservationEvent | ApprovalEvent):
                streamed = ""
                live.update(Text(""), refresh=True)
                if isinstance(event, ObservationEvent):
                    live.console.print(render_step(event.step, lang=lang))
            elif isinstance(event, FinalEvent):
                live.update(Text(""), refresh=True)
                live.console.print(render_result_footer(event.result))
                return event.result
    raise click.ClickException("the run ended without a result")


def human_executor(tool: Tool, arguments: JSONObject) -> str:
    """SPEC M2: the person is the model's tools; they do the Action and type what happened."""
    click.echo(f"\n>>> {terminal_safe(format_call(tool.name, None, arguments))}", err=True)
    click.echo("Do this, then type the Observation (one line):", err=True)
    line = sys.stdin.readline()
    if not line:
        raise ToolError("no observation was typed (standard input is closed)")
    return line.rstrip("\n")


def ask_approval(tool: Tool, arguments: JSONObject) -> bool | str:
    """SPEC S3 at a terminal: a person approves or denies this exact call, seeing what it
    would do (the same diff the web page shows)."""
    from rich.console import Console

    from tao.cli.render import render_pending

    console = Console(stderr=True, highlight=False)
    preview = tool.preview(arguments) if tool.preview is not None else None
    console.print(render_pending(tool.name, arguments, tuple(tool.effects), preview))
    answer = click.prompt(
        "Allow it? [y/N] (anything else is a no, told to the model as the reason)",
        default="n",
        err=True,
        show_default=False,
    )
    return True if answer.strip().lower() in {"y", "yes"} else answer.strip()


_HELP = {
    "tools": f"Tool sets, comma-separated: {TOOL_SET_NAMES}.",
    "project": "Folder the file and test tools are confined to.",
    "corpus": "JSONL corpus (title, text) for the wiki tools.",
    "protocol": "native tool calling where the backend has it, else text.",
    "human": "You perform every Action and type the Observation.",
    "no-input": "Never prompt; calls that need approval are refused.",
    "mcp": "Add the tools of an MCP server started by this command (stdio); repeatable.",
    "mcp-url": "Add the tools of the MCP server at this streamable-HTTP URL; repeatable.",
    "json": "Print one JSON object instead of the live display.",
    "output-schema": "JSON Schema file the final answer must match (printed as JSON).",
    "max-cost": "Money limit of the run in US dollars; needs a model with a known price.",
}
_USD = click.FloatRange(min=0, min_open=True)
_FOLDER = click.Path(file_okay=False, path_type=Path)
_FILE = click.Path(dir_okay=False, path_type=Path)
_option = click.option


@click.command()
@click.argument("task")
@model_option()
@_option("-t", "--tools", "tool_sets", multiple=True, help=_HELP["tools"])
@_option("--project", type=_FOLDER, default=".", help=_HELP["project"])
@_option("--corpus", type=_FILE, help=_HELP["corpus"])
@shown("--lang", click.Choice(sorted(LABELS)), "en", "Label language of the text protocol.")
@shown("--protocol", click.Choice(["auto", "text", "native"]), "auto", _HELP["protocol"])
@shown("--max-steps", click.IntRange(min=1), 8, "Model replies at most.")
@shown("--max-seconds", click.FloatRange(min=0, min_open=True), 300.0, "Wall-clock limit.")
@shown("--max-tokens", click.IntRange(min=1), 100_000, "Total token limit of the run.")
@_option("--max-cost", "max_cost_usd", type=_USD, metavar="USD", help=_HELP["max-cost"])
@shown("--max-repeats", click.IntRange(min=0), 2, "Identical calls allowed before the run ends.")
@shown("--temperature", float, 0.0, "Sampling temperature.")
@base_url_option
@_option("--no-grammar", is_flag=True, help="Do not constrain local decoding to the format.")
@_option("--human-tools", is_flag=True, help=_HELP["human"])
@_option("--no-input", is_flag=True, help=_HELP["no-input"])
@_option("--mcp", "mcp_commands", multiple=True, metavar="'COMMAND ARGS'", help=_HELP["mcp"])
@_option("--mcp-url", "mcp_urls", multiple=True, metavar="URL", help=_HELP["mcp-url"])
@_option("--output-schema", type=_FILE, help=_HELP["output-schema"])
@_option("--no-log", is_flag=True, help="Do not record this run in the run log.")
@_option("--json", "as_json", is_flag=True, help=_HELP["json"])
def run(task: str, **options: Unpack[RunOptions]) -> None:
    """Run an agent on TASK and show each Thought, Action and Observation.

    \b
    tao run "What is 17 * 23 + 4?" --model local --tools calc
    tao run "Why does tests/test_cart.py fail?" -m openai:gpt-4o-mini -t files,tests --project .
    """
    from tao.agent import Agent

    sets = [name for chunk in options["tool_sets"] for name in chunk.split(",") if name.strip()]
    interactive = sys.stdin.isatty() and not options["no_input"]
    servers: list[McpServer] = []  # MCP connections, closed (processes ended) after the run
    latest = Latest()
    try:
        config = _config(options, sets)
        servers = _connect_mcp(options["mcp_commands"], options["mcp_urls"])
        agent = Agent(
            tools=[*sets, *_mcp_tools(servers)],
            config=config,
            executor=human_executor if options["human_tools"] else None,
            approve=ask_approval if interactive else None,
            record=not options["no_log"],
        )
        with sigterm_interrupts():
            if options["as_json"]:
                result = agent.run(task, observers=[latest])
            else:
                result = show_live(agent, task, observers=[latest])
    except (ModelSpecError, ConfigError) as error:
        raise click.UsageError(str(error)) from None
    except TaoError as error:
        failed(error, latest, options["as_json"])
    except KeyboardInterrupt:
        interrupted(latest, options["as_json"])
    finally:
        for server in servers:
            server.close()
    conclude(result, options["as_json"])


class RunOptions(TypedDict):
    """What ``tao run`` takes, as click parsed it."""

    model_spec: str
    tool_sets: tuple[str, ...]
    project: Path
    corpus: Path | None
    lang: str
    protocol: Literal["auto", "text", "native"]
    max_steps: int
    max_seconds: float
    max_tokens: int
    max_cost_usd: float | None
    max_repeats: int
    temperature: float
    base_url: str | None
    no_grammar: bool
    human_tools: bool
    no_input: bool
    mcp_commands: tuple[str, ...]
    mcp_urls: tuple[str, ...]
    output_schema: Path | None
    no_log: bool
    as_json: bool


def _config(options: RunOptions, sets: list[str]) -> RunConfig:
    """The run's settings from the command line; the run log records exactly these.

    Options named like a RunConfig field (``--max-steps`` is ``max_steps``) go in as
    they are; the others are translated here.
    """
    same = {key: value for key, value in options.items() if key in _CONFIG_FIELDS}
    corpus, schema_file = options["corpus"], options["output_schema"]
    if schema_file is not None:
        same["output_schema"] = schema_of(_read_schema(schema_file))
    return RunConfig(
        model=options["model_spec"],
        tools=tuple(sets),
        grammar=not options["no_grammar"],
        project=str(options["project"].resolve()),
        corpus=str(corpus.resolve()) if corpus else None,
    ).replace(**same)


_CONFIG_FIELDS = frozenset(f.name for f in dataclasses.fields(RunConfig)) - {
    "corpus",
    "project",
    "output_schema",
}


def _read_schema(path: Path) -> JSONObject:
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise click.UsageError(f"cannot read the output schema {path}: {error}") from None
    if not isinstance(schema, dict):
        raise click.UsageError(f"the output schema {path} must be a JSON object")
    return schema


def _connect_mcp(commands: tuple[str, ...], urls: tuple[str, ...]) -> list[McpServer]:
    if not commands and not urls:
        return []
    from tao.tools.mcp import McpServer

    servers: list[McpServer] = []
    try:
        servers.extend(McpServer.stdio(command) for command in commands)
        servers.extend(McpServer.http(url) for url in urls)
    except BaseException:  # one failed to start: end the ones already running
        for server in servers:
            server.close()
        raise
    return servers


def _mcp_tools(servers: list[McpServer]) -> list[Tool]:
    if not servers:
        return []
    from tao.tools.mcp import mcp_tools

    return list(mcp_tools(servers))
