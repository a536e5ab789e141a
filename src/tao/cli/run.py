"""``tao run TASK``: one agent run from the shell, shown live or printed as JSON (SPEC M1, M2)."""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import click

from tao.cli.ending import (
    Latest,
    RunCommand,
    conclude,
    failed,
    interrupted,
    not_started,
    sigterm_interrupts,
)
from tao.cli.options import TOOL_SET_NAMES as TOOL_SET_NAMES  # the --tools help lists them
from tao.cli.settings import config_values, setting_options, split_options
from tao.cli.terminal import console as safe_console
from tao.cli.terminal import echo
from tao.cli.usage import USAGE_ERRORS, UsageProblem
from tao.errors import TaoError, ToolError
from tao.events import AnswerEvent, CompactionEvent, Event, FinalEvent, ObservationEvent
from tao.format import format_call, terminal_safe
from tao.interrupts import read_line
from tao.run.act import Person
from tao.sandbox.settings import MODE_ENV, ProcessSettings
from tao.state.config import PendingCall, RunConfig
from tao.state.jsontypes import JSONObject
from tao.state.result import RunObserver, RunResult
from tao.tools.base import Tool

if TYPE_CHECKING:
    from tao.agent import Agent
    from tao.cli.live import RunStatus
    from tao.tools.mcp import McpServer


def show_live(
    agent: Agent,
    task: str,
    events: Iterator[Event] | None = None,
    observers: Sequence[RunObserver] = (),
    status: RunStatus | None = None,
) -> RunResult:
    """Print the model's text as it streams, then each finished step, the answer last.

    On a terminal a status line (step, elapsed time, tokens, what is happening) stays
    under the steps until the run ends; ``status`` must observe the run that ``events``
    come from (the default stream is given it here).
    """
    from rich.text import Text

    from tao.cli.live import RunStatus, live_region, paused, status_console
    from tao.cli.render import render_compaction, render_result_footer, render_step

    console = safe_console()
    console.print(
        Text.assemble(
            ("tao ", "bold cyan"), (agent.model.name, "cyan"), "  ", (terminal_safe(task), "bold")
        )
    )
    lang = agent.labels.code
    status = status or RunStatus()
    if events is None:
        events = agent.stream(task, observers=[*observers, status])
    shown = status_console(console)
    live = live_region(shown or console, status)
    if shown is not None:
        live.start(refresh=True)
        if isinstance(agent.approve, Person):  # a prompt must not fight the status line
            agent.approve = dataclasses.replace(
                agent.approve, ask=paused(live, agent.approve.ask)
            )  # still a person (R1)
        elif agent.approve is not None:
            agent.approve = paused(live, agent.approve)
        if agent.executor is human_executor:
            agent.executor = paused(live, human_executor)
    try:
        for event in events:
            status.see(event)
            if isinstance(event, CompactionEvent):  # as it happens, before its step's model call
                console.print(render_compaction(event.compaction))
            elif isinstance(event, ObservationEvent | AnswerEvent):
                console.print(render_step(event.step, lang=lang, compactions=False))
            elif isinstance(event, FinalEvent):
                live.stop()
                console.print(render_result_footer(event.result))
                return event.result
    finally:
        live.stop()
    raise click.ClickException("the run ended without a result")


def human_executor(tool: Tool, arguments: JSONObject) -> str:
    """SPEC M2: the person is the model's tools; they do the Action and type what happened."""
    echo(f"\n>>> {terminal_safe(format_call(tool.name, None, arguments))}", err=True)
    echo("Do this, then type the Observation (one line):", err=True)
    line = read_line()
    if line is None:
        raise ToolError("no observation was typed (standard input is closed)")
    return line


def _ask_approval(tool: Tool, arguments: JSONObject, call: PendingCall) -> bool | str:
    """SPEC S3 at a terminal: a person approves or denies this exact call, seeing what it
    would do (the same diff the web page shows), and whether a crash cut it short (R1)."""

    from tao.cli.render import render_pending

    console = safe_console(stderr=True)
    preview = tool.preview(arguments) if tool.preview is not None else None
    effects = tuple(tool.effects)
    shown = render_pending(
        tool.name, arguments, effects, preview, call.id, call.warning, call.thought, call.origin
    )
    console.print(shown)
    question = "Allow it? [y/N] (anything else is a no, told to the model as the reason): "
    echo(question, nl=False, err=True)
    typed = read_line()  # not click.prompt: Ctrl-C must find no lock held (tao.interrupts)
    answer = (typed or "").strip()
    if answer.lower() in {"y", "yes"}:
        return True
    return False if answer.lower() in {"", "n", "no"} else answer


#: The person at the terminal: the only approver that may re-run an interrupted call (R1).
ask_approval = Person(_ask_approval, via="cli")


#: The help of the options that are not run settings (those have their field's).
_HELP = {
    "continue": "Follow up this ended run: a new run that starts from its conversation, "
    "with its settings (model, tools, …) except the options given here.",
    "human": "You perform every Action and type the Observation.",
    "no-input": "Never prompt; calls that need approval are refused.",
    "mcp": "Add the tools of the MCP server this command starts ('NAME=COMMAND'); repeatable.",
    "mcp-url": "Add the tools of the MCP server at this HTTP URL ('NAME=URL'); repeatable.",
    "no-log": "Do not record this run in the run log (it cannot pause for an approval then).",
    "json": "Print one JSON object instead of the live display.",
}
_option = click.option


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunFlags:
    """The options of ``tao run`` that are not settings (those are RunConfig's fields, and
    the process's :class:`ProcessSettings`), as click parsed them."""

    human_tools: bool
    no_input: bool
    mcp_commands: tuple[str, ...]
    mcp_urls: tuple[str, ...]
    no_log: bool
    parent: str | None
    as_json: bool


@click.command(cls=RunCommand)
@click.argument("task")
@setting_options("run")
@_option("--human-tools", is_flag=True, help=_HELP["human"])
@_option("--no-input", is_flag=True, help=_HELP["no-input"])
@_option("--mcp", "mcp_commands", multiple=True, metavar="'[NAME=]COMMAND'", help=_HELP["mcp"])
@_option("--mcp-url", "mcp_urls", multiple=True, metavar="[NAME=]URL", help=_HELP["mcp-url"])
@_option("--no-log", is_flag=True, help=_HELP["no-log"])
@_option("--continue", "parent", metavar="RUN_ID", help=_HELP["continue"])
@setting_options("run", ProcessSettings())
@_option("--json", "as_json", is_flag=True, help=_HELP["json"])
def run(task: str, **options: object) -> None:
    """Run an agent on TASK and show each Thought, Action and Observation.

    \b
    tao run "What is 17 * 23 + 4?" --model local --tools calc
    tao run "Why does tests/test_cart.py fail?" -m openai:gpt-4o-mini -t files,tests --project .
    tao run --continue RUN_ID "And in euros?"      # a follow-up that sees the whole conversation
    """
    from tao.agent import Agent
    from tao.cli.live import RunStatus, loading

    settings, rest = split_options(options, "run")
    chosen, rest = split_options(rest, "run", ProcessSettings)
    flags = RunFlags(**rest)  # type: ignore[arg-type]
    process = ProcessSettings(**config_values(chosen, ProcessSettings))  # type: ignore[arg-type]
    interactive = sys.stdin.isatty() and not flags.no_input
    servers: list[McpServer] = []  # MCP connections, closed (processes ended) after the run
    latest = Latest()
    try:
        config = RunConfig(**config_values(settings))  # type: ignore[arg-type]
        sets = [name for name in config.tools if name is not None]
        parent = None if flags.parent is None else _follow_up(flags.parent, config)
        config = parent.config if parent is not None else config
        _announce_sandbox(flags, process, sets or [t or "" for t in config.tools])
        servers = _connect_mcp(flags.mcp_commands, flags.mcp_urls, config)
        with loading(config.model or "", quiet=flags.as_json):
            agent = Agent(
                tools=[*sets, *_mcp_tools(servers)] or None,  # none: the config's (--continue)
                config=config,
                executor=human_executor if flags.human_tools else None,
                approve=ask_approval if interactive else None,
                record=not flags.no_log,
            )
        _check_setup(agent, flags, interactive)
        _announce_hints(agent)
        with sigterm_interrupts():
            history = parent.run_id if parent is not None else None
            if flags.as_json:
                result = agent.run(task, observers=[latest], history=history)
            else:
                status = RunStatus()
                events = agent.stream(task, observers=[latest, status], history=history)
                result = show_live(agent, task, events=events, status=status)
    except (*USAGE_ERRORS, click.ClickException) as error:
        not_started(error, flags.as_json)
    except TaoError as error:
        failed(error, latest, flags.as_json)
    except KeyboardInterrupt:
        interrupted(latest, flags.as_json, recorded=not flags.no_log)
    finally:
        for server in servers:
            server.close()
    conclude(result, flags.as_json, recorded=not flags.no_log)


def _announce_sandbox(flags: RunFlags, process: ProcessSettings, sets: Sequence[str]) -> None:
    """SPEC S10: children never run unconfined in silence. ``--sandbox`` becomes
    ``$TAO_SANDBOX`` for this process, so every part of tao (the approval gate included)
    reads one answer; then one line on stderr if pytest or an MCP server would run
    without a sandbox, or a refusal (exit 2) if the sandbox is required and missing."""
    import os

    from tao.errors import ConfigError
    from tao.sandbox import startup_notice

    os.environ[MODE_ENV] = process.sandbox
    names = {name.strip().lower() for chunk in sets for name in chunk.split(",")}
    children = ["run_tests"] if "tests" in names else []
    children += ["MCP servers"] if flags.mcp_commands else []
    try:
        line = startup_notice(children)
    except ConfigError as error:
        raise UsageProblem(str(error)) from None
    if line is not None:
        echo(line, err=True)


def _check_setup(agent: Agent, flags: RunFlags, interactive: bool) -> None:
    """Refuse a run that could pause for good; say where file tools work.

    With ``--no-log`` nothing is recorded, so a run paused for an approval could never
    be resumed: a call that needs a person's yes (a tool with side effects that no
    policy rule pre-approves in full) is refused up front unless a person answers at
    this terminal, in this process. ``--human-tools`` alone never pauses: the person
    performs the Actions, and read-only ones need no yes.
    """
    from click.core import ParameterSource

    from tao.paths import default_policy_path

    gated = [t.name for t in agent.tools.values() if agent.policy.may_pause(t)]
    if flags.no_log and gated and not interactive:
        raise UsageProblem(
            f"--no-log cannot be used with tools that need approval ({', '.join(gated)}) "
            "when nobody answers at this terminal: the run would pause, and a run that is "
            "not recorded can never be resumed. Drop --no-log, run it at a terminal without "
            f"--no-input to approve each call, or pre-approve them in {default_policy_path()}."
        )
    roots = sorted({str(t.root) for t in agent.tools.values() if t.root is not None})
    project = click.get_current_context().get_parameter_source("project")
    if roots and project is ParameterSource.DEFAULT:
        echo(
            f"files confined to {', '.join(roots)} (the current folder; "
            "choose another with --project DIR)",
            err=True,
        )


def _announce_hints(agent: Agent) -> None:
    """SPEC S3: one line on stderr when MCP servers call tools read-only that the person's
    policy does not, so a prompt at each of their calls surprises nobody; one more when a
    ``read_only`` entry names a server of the run but none of its tools (a typo)."""
    from tao.paths import default_policy_path
    from tao.tools.mcp_tool import hints_notice, unmatched_notice

    where = agent.policy.source or default_policy_path()
    tools = agent.tools.values()
    for line in (hints_notice(tools, str(where)), unmatched_notice(tools, agent.policy.mcp)):
        if line is not None:
            echo(line, err=True)


@dataclasses.dataclass(frozen=True)
class FollowUp:
    """``--continue RUN_ID``: the full id of the run followed up, and the follow-up's settings."""

    run_id: str
    config: RunConfig


def _follow_up(run_id: str, given: RunConfig) -> FollowUp:
    """The parent's recorded settings, changed only by the options typed on this command
    line; a missing run, or one that has not ended, is a usage error (exit 2)."""
    from click.core import ParameterSource

    from tao.approval.decide import rebuildable

    context = click.get_current_context()
    try:
        from tao.store.factory import open_store

        with open_store() as store:
            parent = store.get_summary(run_id)
        if parent.status.resumable:
            raise click.UsageError(
                f"--continue: run {parent.run_id} has not ended (status {parent.status}); "
                f"finish it first with `tao resume {parent.run_id}`, then continue it"
            )
        typed = {
            name
            for name in context.params
            if context.get_parameter_source(name) is ParameterSource.COMMANDLINE
        }
        fields = {f.name for f in dataclasses.fields(RunConfig)}
        changes = {name: getattr(given, name) for name in typed & fields}
        config = rebuildable(parent.run_id, parent.config).replace(**changes)
    except TaoError as error:
        raise click.UsageError(f"--continue: {error}") from None
    return FollowUp(parent.run_id, config)


def _connect_mcp(
    commands: tuple[str, ...], urls: tuple[str, ...], config: RunConfig
) -> list[McpServer]:
    if not commands and not urls:
        return []
    from tao.sandbox import SERVER_LIMITS, Sandbox
    from tao.tools.mcp import McpServer

    sandbox = Sandbox(
        network="mcp" in config.network, pass_env=config.pass_env, limits=SERVER_LIMITS
    )
    servers: list[McpServer] = []
    try:
        for name, command in map(_named, commands):
            servers.append(McpServer.stdio(command, name=name, sandbox=sandbox))
        for name, url in map(_named, urls):
            servers.append(McpServer.http(url, name=name))
    except BaseException:  # one failed to start: end the ones already running
        for server in servers:
            server.close()
        raise
    return servers


#: ``--mcp 'notes=python server.py'``: a server's name for the policy, then its command.
_NAMED = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.-]{0,63})=(\S.*)", re.DOTALL)


def _named(spec: str) -> tuple[str | None, str]:
    """``NAME=COMMAND`` (or ``NAME=URL``) as its two parts; no name: ``None`` and ``spec``."""
    found = _NAMED.fullmatch(spec.strip())
    return (found[1], found[2]) if found else (None, spec)


def _mcp_tools(servers: list[McpServer]) -> list[Tool]:
    if not servers:
        return []
    from tao.tools.mcp import mcp_tools

    return list(mcp_tools(servers))
