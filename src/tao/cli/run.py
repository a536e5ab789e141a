"""``tao run TASK``: one agent run from the shell, shown live or printed as JSON (SPEC M1, M2)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import click

from tao.errors import ModelSpecError, TaoError, ToolError
from tao.events import ApprovalEvent, Event, FinalEvent, ObservationEvent, TextDelta
from tao.jsontypes import JSONObject
from tao.protocol.labels import LABELS
from tao.tools.base import Tool
from tao.trace import RunResult, Status

if TYPE_CHECKING:
    from tao.agent import Agent
    from tao.tools.mcp import McpServer

#: Exit codes, so scripts can tell an answer from a spent budget from a failure; 130 is the
#: shell's code for a run stopped by Ctrl-C.
EXIT = {
    Status.FINISHED: 0,
    Status.ERROR: 1,
    Status.RUNNING: 1,
    Status.MAX_STEPS: 3,
    Status.AWAITING_APPROVAL: 4,
    Status.INTERRUPTED: 130,
    Status.CANCELLED: 130,
}


def show_live(agent: Agent, task: str, events: Iterator[Event] | None = None) -> RunResult:
    """Print the model's text as it streams, then each finished step, the answer last."""
    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

    from tao.cli.render import render_result_footer, render_step

    console = Console(highlight=False)
    console.print(
        Text.assemble(("tao ", "bold cyan"), (agent.model.name, "cyan"), "  ", (task, "bold"))
    )
    lang = agent.labels.code
    events = events if events is not None else agent.stream(task)
    streamed = ""
    with Live(Text(""), console=console, auto_refresh=False, transient=True) as live:
        for event in events:
            if isinstance(event, TextDelta):
                streamed += event.text
                live.update(Text(streamed, style="dim"), refresh=True)
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
    shown = ", ".join(f"{key}={value!r}" for key, value in arguments.items())
    click.echo(f"\n>>> {tool.name}({shown})", err=True)
    click.echo("Do this, then type the Observation (one line):", err=True)
    line = sys.stdin.readline()
    if not line:
        raise ToolError("no observation was typed (standard input is closed)")
    return line.rstrip("\n")


def ask_approval(tool: Tool, arguments: JSONObject) -> bool | str:
    """SPEC S3 at a terminal: a person approves or denies this exact call."""
    shown = ", ".join(f"{key}={value!r}" for key, value in arguments.items())
    click.echo(f"\n{tool.name}({shown}) wants to {', '.join(tool.effects)}.", err=True)
    answer = click.prompt(
        "Allow it? [y = yes, anything else = no, with that as the reason]",
        default="n",
        err=True,
        show_default=False,
    )
    return True if answer.strip().lower() in {"y", "yes"} else answer.strip()


@click.command()
@click.argument("task")
@click.option(
    "-m",
    "--model",
    "model_spec",
    envvar="TAO_MODEL",
    default="local",
    show_default=True,
    help="local, local:PATH.gguf, openai:MODEL, anthropic:MODEL, gemini:MODEL, replay:PATH",
)
@click.option(
    "-t",
    "--tools",
    "tool_sets",
    multiple=True,
    help="Tool sets, comma-separated: calc, files, tests, wiki, human.",
)
@click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    help="Folder the file and test tools are confined to.",
)
@click.option(
    "--corpus",
    type=click.Path(dir_okay=False, path_type=Path),
    help="JSONL corpus (title, text) for the wiki tools.",
)
@click.option(
    "--lang",
    type=click.Choice(sorted(LABELS)),
    default="en",
    show_default=True,
    help="Label language of the text protocol.",
)
@click.option(
    "--protocol",
    type=click.Choice(["auto", "text", "native"]),
    default="auto",
    show_default=True,
    help="native tool calling where the backend has it, else text.",
)
@click.option("--max-steps", type=click.IntRange(min=1), default=8, show_default=True)
@click.option(
    "--max-seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=300.0,
    show_default=True,
    help="Wall-clock limit of the run.",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(min=1),
    default=100_000,
    show_default=True,
    help="Total token limit of the run.",
)
@click.option("--temperature", type=float, default=0.0, show_default=True)
@click.option(
    "--base-url",
    envvar="OPENAI_BASE_URL",
    help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1",
)
@click.option("--no-grammar", is_flag=True, help="Do not constrain local decoding to the format.")
@click.option(
    "--human-tools", is_flag=True, help="You perform every Action and type the Observation."
)
@click.option(
    "--no-input", is_flag=True, help="Never prompt; calls that need approval are refused."
)
@click.option(
    "--mcp",
    "mcp_commands",
    multiple=True,
    metavar="'COMMAND ARGS'",
    help="Add the tools of an MCP server started by this command (stdio); repeatable.",
)
@click.option(
    "--mcp-url",
    "mcp_urls",
    multiple=True,
    metavar="URL",
    help="Add the tools of the MCP server at this streamable-HTTP URL; repeatable.",
)
@click.option("--no-log", is_flag=True, help="Do not record this run in the run log.")
@click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object instead of the live display."
)
def run(
    task: str,
    model_spec: str,
    tool_sets: tuple[str, ...],
    project: Path,
    corpus: Path | None,
    lang: str,
    protocol: str,
    max_steps: int,
    max_seconds: float,
    max_tokens: int,
    temperature: float,
    base_url: str | None,
    no_grammar: bool,
    human_tools: bool,
    no_input: bool,
    mcp_commands: tuple[str, ...],
    mcp_urls: tuple[str, ...],
    no_log: bool,
    as_json: bool,
) -> None:
    """Run an agent on TASK and show each Thought, Action and Observation.

    \b
    tao run "What is 17 * 23 + 4?" --model local --tools calc
    tao run "Why does tests/test_cart.py fail?" -m openai:gpt-4o-mini -t files,tests --project .
    """
    from tao.agent import Agent
    from tao.state import RunConfig

    sets = [name for chunk in tool_sets for name in chunk.split(",") if name.strip()]
    interactive = sys.stdin.isatty() and not no_input
    servers: list[McpServer] = []  # MCP connections, closed (processes ended) after the run
    try:
        config = RunConfig(
            model=model_spec,
            tools=tuple(sets),
            lang=lang,
            protocol=protocol,  # type: ignore[arg-type]
            max_steps=max_steps,
            max_seconds=max_seconds,
            max_tokens=max_tokens,
            temperature=temperature,
            grammar=not no_grammar,
            project=str(project.resolve()),
            corpus=str(corpus.resolve()) if corpus else None,
            base_url=base_url,
        )
        servers = _connect_mcp(mcp_commands, mcp_urls)
        agent = Agent(
            tools=[*sets, *_mcp_tools(servers)],
            config=config,
            executor=human_executor if human_tools else None,
            approve=ask_approval if interactive else None,
            record=not no_log,
        )
        result = agent.run(task) if as_json else show_live(agent, task)
    except ModelSpecError as error:
        raise click.UsageError(str(error)) from None
    except TaoError as error:
        click.echo(f"Error: {error}", err=True)
        sys.exit(1)
    finally:
        for server in servers:
            server.close()
    if as_json:
        click.echo(json.dumps(result.to_dict(), ensure_ascii=False))
    sys.exit(EXIT[result.status])


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
