"""Tools from MCP servers (SPEC T3), through the official ``mcp`` SDK.

People already run their tools as MCP servers; this module lets a run use them
as ordinary :class:`~tao.tools.base.Tool` objects, with the server's own JSON
schemas, so the loop, both protocols and the approval gate treat them like any
other tool:

    from tao import Agent
    from tao.tools.mcp import McpServer

    with McpServer.stdio("python server.py") as server:
        result = Agent("openai:gpt-4o-mini", [*server.tools(), "calc"]).run("What is 2 + 3?")

    with McpServer.http("http://127.0.0.1:8000/mcp") as server:
        ...

Why a thread: the SDK is async and its transports live in anyio task groups
that must be entered and left by one task, while tao's loop is synchronous (and
may itself run inside an asyncio loop). So each :class:`McpServer` owns a
background thread with its own event loop, in which one task holds the
connection open; every request is handed to that loop thread-safely and waited
for with a timeout, so a hung server becomes a :class:`~tao.errors.ToolError`
Observation, never a hung run.

Why ``sends``: tool annotations are the server's word, and a hostile or careless server
can call ``delete_everything`` read-only. So every MCP tool needs a person's approval for
each call (SPEC S3), declared ``deletes`` when the server says it is destructive and
``sends`` otherwise, unless the person's policy calls it read-only (``[mcp] read_only =
["notes:search"]``, or ``trust_hints = ["notes"]`` to believe a server's ``readOnlyHint``;
:mod:`tao.approval.mcp_rules`). ``notes`` is the server's *name*: the one given
(``name="notes"``, ``tao run --mcp 'notes=python server.py'``) or one made from its command
(:func:`default_name`).
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import tempfile
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, TextIO, TypeVar
from urllib.parse import urlsplit

from tao.approval.mcp_rules import SERVER_NAME, McpRules
from tao.errors import InternalError, ToolError
from tao.lookalikes import name_problem
from tao.sandbox import SERVER_LIMITS, NotConfinable, Sandbox, SandboxUnavailable, confine
from tao.sandbox import must_confine as sandbox_ready
from tao.sandbox.protected import Sweep
from tao.state.jsontypes import JSON, JSONObject
from tao.tools.base import Tool
from tao.tools.mcp_tool import (
    MAX_DESCRIPTION_CHARS,
    MAX_SERVER_DESCRIPTION_CHARS,
    AnyArgs,
    McpTool,
    clean_schema,
    hints_of,
    plain_text,
    result_text,
    safe_name,
    schema_problem,
    volatile_of,
)

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import Tool as WireTool

__all__ = ["McpError", "McpServer", "McpTool", "default_name", "mcp_tools"]

T = TypeVar("T")
#: Seconds to wait for a server to start and list its tools.
CONNECT_TIMEOUT = 30.0
#: Seconds to wait for one tool call before it becomes an ``Error:`` Observation.
CALL_TIMEOUT = 60.0
#: Seconds to wait for a clean shutdown; the SDK escalates to SIGTERM/SIGKILL within it.
CLOSE_TIMEOUT = 10.0


class McpError(ToolError):
    """An MCP server could not be started, reached or understood."""


class McpServer:
    """A live connection to one MCP server, usable from synchronous code and from asyncio.

    Use :meth:`stdio` or :meth:`http`, as a context manager or with :meth:`close`;
    closing ends the session and, for stdio, the server process (SIGTERM, then
    SIGKILL). The server's stderr goes to a temporary file, not the terminal; its
    last lines explain a server that fails to start.
    """

    def __init__(
        self,
        label: str,
        connect: Callable[[TextIO], Client],
        *,
        name: str,
        prefix: str = "",
        connect_timeout: float = CONNECT_TIMEOUT,
        call_timeout: float = CALL_TIMEOUT,
    ) -> None:
        if not SERVER_NAME.fullmatch(name):
            raise McpError(
                f"MCP server name {name!r} is not a plain name (letters, digits, '_', '.', "
                "'-'; at most 64): a policy names the server's tools as NAME:TOOL"
            )
        try:
            import mcp  # noqa: F401  # an optional extra; say how to get it before any thread starts
        except ImportError:
            raise McpError("MCP support needs the SDK: pip install 'tao[mcp]'") from None
        self.label = label
        #: What a policy calls this server (``read_only = ["NAME:tool"]``).
        self.name = name
        self.prefix = prefix
        self.call_timeout = call_timeout
        # Lives as long as the connection; closed in close().
        self._errlog: TextIO = tempfile.TemporaryFile(  # noqa: SIM115
            "w+", encoding="utf-8", errors="replace"
        )
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"tao-mcp {label}", daemon=True
        )
        self._closing = asyncio.Event()
        self._client: Client | None = None
        self._wire_tools: list[WireTool] = []
        self._closed = False
        #: Set by :meth:`stdio` for a server given writable folders (SPEC S10).
        self.sweep: Sweep | None = None
        self._lost = ""  # why a live connection ended, for the next call's error
        self._thread.start()
        self._task: asyncio.Task[None] | None = None
        self._finished = threading.Event()
        ready: Future[None] = Future()
        asyncio.run_coroutine_threadsafe(self._hold(connect, ready), self._loop)
        try:
            ready.result(timeout=connect_timeout)
        except BaseException as error:
            why = (
                f"did not start within {connect_timeout:g}s"
                if isinstance(error, FutureTimeout)
                else f"failed to start: {_describe(error)}"
            )
            self._stop(cancel=True)
            message = f"MCP server {label} {why}{self._stderr_tail()}"
            self._errlog.close()
            raise McpError(message) from None

    @classmethod
    def stdio(
        cls,
        command: str | Sequence[str],
        env: Mapping[str, str] | None = None,
        *,
        cwd: str | None = None,
        name: str | None = None,
        prefix: str = "",
        connect_timeout: float = CONNECT_TIMEOUT,
        call_timeout: float = CALL_TIMEOUT,
        sandbox: Sandbox | None = None,
    ) -> McpServer:
        """Start ``command`` (a string is split like a shell would) and talk over its stdio.

        The server runs in tao's sandbox (SPEC S10, :mod:`tao.sandbox`) with ``sandbox``'s
        settings (default: no network, nothing writable, no CPU or memory cap): it reads
        the system, the Python installation, ``cwd`` and the folders of the files its
        arguments name (``python server.py``), and gets the allow-list environment plus
        ``env``. Where no sandbox is available it runs as before, with the SDK's minimal
        environment (PATH, HOME, ...) plus ``env``, so API keys of the agent's own
        process still do not leak into third-party servers. ``name`` is what a policy calls
        the server (default: :func:`default_name` of the command).
        """
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not argv:
            raise McpError("empty MCP server command")
        label = shlex.join(argv)
        sandbox = sandbox or Sandbox(limits=SERVER_LIMITS)
        sweep = Sweep(sandbox.writable, "mcp", "the MCP server") if sandbox.writable else None
        spawn = _spawn_command(argv, env, cwd, sandbox, label)

        def connect(errlog: TextIO) -> Client:
            from mcp import Client, StdioServerParameters
            from mcp.client.stdio import stdio_client

            program, args, child_env = spawn
            params = StdioServerParameters(command=program, args=args, env=child_env, cwd=cwd)
            return Client(stdio_client(params, errlog=errlog), read_timeout_seconds=call_timeout)

        server = cls(
            label,
            connect,
            name=name or default_name(argv),
            prefix=prefix,
            connect_timeout=connect_timeout,
            call_timeout=call_timeout,
        )
        server.sweep = sweep
        return server

    @classmethod
    def http(
        cls,
        url: str,
        *,
        name: str | None = None,
        prefix: str = "",
        connect_timeout: float = CONNECT_TIMEOUT,
        call_timeout: float = CALL_TIMEOUT,
    ) -> McpServer:
        """Connect to a server over streamable HTTP, e.g. ``http://127.0.0.1:8000/mcp``;
        ``name`` is what a policy calls it (default: its host and port, ``127.0.0.1-8000``)."""

        def connect(errlog: TextIO) -> Client:
            from mcp import Client

            return Client(url, read_timeout_seconds=call_timeout)

        return cls(
            url,
            connect,
            name=name or _url_name(url),
            prefix=prefix,
            connect_timeout=connect_timeout,
            call_timeout=call_timeout,
        )

    async def _hold(self, connect: Callable[[TextIO], Client], ready: Future[None]) -> None:
        """The one task that enters and leaves the SDK client, as anyio requires."""
        self._task = asyncio.current_task()
        try:
            async with connect(self._errlog) as client:
                tools: list[WireTool] = []
                cursor: str | None = None
                for _ in range(100):  # a paginator that never ends cannot hang the start
                    page = await client.list_tools(cursor=cursor)
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                    if cursor is None:
                        break
                self._client, self._wire_tools = client, tools
                ready.set_result(None)
                await self._closing.wait()
        except BaseException as error:
            if not ready.done():
                ready.set_exception(error)
            elif not self._closed:
                self._lost = f" (the connection ended: {_describe(error)})"
            if not isinstance(error, Exception):
                raise
        finally:
            self._client = None
            self._finished.set()

    def _run(self, make: Callable[[Client], Awaitable[T]], timeout: float, what: str) -> T:
        client = self._client
        if self._closed or client is None:
            raise McpError(f"MCP server {self.label} is not connected{self._lost}")

        async def call() -> T:
            return await make(client)

        future = asyncio.run_coroutine_threadsafe(call(), self._loop)
        try:
            return future.result(timeout=timeout)
        except FutureTimeout:
            future.cancel()
            raise McpError(
                f"{what} got no answer from MCP server {self.label} within {timeout:g}s"
            ) from None
        except ToolError:
            raise
        except Exception as error:
            raise McpError(
                f"{what} failed on MCP server {self.label}: {_describe(error)}"
            ) from None

    def call(self, name: str, arguments: JSONObject) -> str:
        """Call a tool by its server-side name; ``isError`` results raise :class:`ToolError`.

        A server given writable folders is swept after every call: what it planted there
        that would run later outside the sandbox (``.git``, a virtual environment,
        compiled Python) is removed, and the observation says so (SPEC S10)."""
        try:
            result = self._run(
                lambda client: client.call_tool(name, arguments), self.call_timeout, name
            )
        except ToolError as error:
            note = self._swept()
            if note:
                raise McpError(f"{error}{note}") from None
            raise
        text = result_text(result) + self._swept()
        if result.is_error:
            raise ToolError(text or f"{name} reported an error")
        return text

    def _swept(self) -> str:
        note = self.sweep() if self.sweep is not None else ""
        return f"\n{note}" if note else ""

    def tools(self) -> list[Tool]:
        """The server's tools as tao tools, with protocol-safe names and declared effects.

        What the server says about its tools is untrusted (SPEC S4): a name that is not
        ASCII (a look-alike of another tool's, UTS #39) or a schema too large or with
        odd parameter names is refused here, at start-up; descriptions are cut to
        :data:`MAX_DESCRIPTION_CHARS` each and :data:`MAX_SERVER_DESCRIPTION_CHARS` in
        all, and the prompt fences them as data.
        """
        made: dict[str, Tool] = {}
        budget = MAX_SERVER_DESCRIPTION_CHARS
        for wire in self._wire_tools:
            problem = name_problem(self.prefix + wire.name)
            if problem is not None:
                raise McpError(f"MCP server {self.label}: {problem}; rename it on the server")
            name = safe_name(self.prefix + wire.name)
            if name in made:
                raise McpError(
                    f"MCP server {self.label} has two tools named {name!r} once made "
                    "identifiers; pass a prefix or rename one"
                )
            made[name] = self._make_tool(name, wire, min(MAX_DESCRIPTION_CHARS, budget))
            budget -= len(made[name].description)
        return list(made.values())

    def _make_tool(self, name: str, wire: WireTool, limit: int) -> McpTool:
        schema = clean_schema(dict(wire.input_schema))
        if not isinstance(schema, dict):
            raise InternalError(f"clean_schema turned {name}'s object schema into {schema!r}")
        problem = schema_problem(schema)
        if problem is not None:
            raise McpError(f"MCP server {self.label}: tool {name} is refused: {problem}")
        remote = wire.name
        description = plain_text(wire.description or wire.title or "", limit) or name

        def run(**arguments: JSON) -> str:
            return self.call(remote, arguments)

        run.__name__ = name
        return McpTool(
            name=name,
            description=description,
            fn=run,
            params=AnyArgs,
            volatile=volatile_of(wire),
            param_names=_param_order(schema),
            input_schema=schema,
            remote_name=remote,
            server_label=self.label,
            server_name=self.name,
            hints=hints_of(wire),
        ).judged(McpRules())  # an effect until a person's policy says otherwise (S3)

    def _stderr_tail(self, lines: int = 5) -> str:
        try:
            self._errlog.seek(0)
            tail = [line.rstrip() for line in self._errlog.read().splitlines() if line.strip()]
        except (OSError, ValueError):
            return ""
        return f" (server stderr: {' | '.join(tail[-lines:])})" if tail else ""

    def close(self) -> None:
        """End the session, stop the server process (stdio) and the background thread;
        then sweep its writable folders a last time, now that nothing can re-make what
        is removed (the SDK waits for the process to end)."""
        self._stop(cancel=False)
        self._errlog.close()
        if self.sweep is not None:
            self.sweep()

    def _stop(self, *, cancel: bool) -> None:
        """Leave the client from its own task; cancel it if it is stuck (e.g. mid-handshake).

        The SDK shields its stdio shutdown from cancellation, so even a cancelled
        task closes stdin, then terminates and kills the child within its bounds.
        """
        if self._closed:
            return
        self._closed = True
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._closing.set)
            if cancel or not self._finished.wait(CLOSE_TIMEOUT):
                self._loop.call_soon_threadsafe(self._cancel_main)
                self._finished.wait(CLOSE_TIMEOUT)
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=CLOSE_TIMEOUT)
        if not self._thread.is_alive():
            self._loop.close()

    def _cancel_main(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def __enter__(self) -> McpServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"McpServer({self.label!r})"


#: Variables the SDK adds to every server's environment; a sandboxed server loses those
#: that are not on tao's allow-list (its HOME and PATH come from the allow-list instead).
_SDK_ADDED = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")


def _spawn_command(
    argv: list[str], env: Mapping[str, str] | None, cwd: str | None, sandbox: Sandbox, label: str
) -> tuple[str, list[str], dict[str, str] | None]:
    """The program, arguments and environment the SDK starts: the server wrapped in the
    sandbox when one is available (or required), else the server itself."""
    try:
        if not sandbox_ready():
            return argv[0], argv[1:], dict(env) if env else None
        folder = Path(cwd or os.getcwd()).resolve()
        named = [folder / arg for arg in argv[1:] if not arg.startswith("-")]
        files = [path.resolve().parent for path in named if path.is_file()]
        confined = confine(
            argv, sandbox, cwd=folder, readable=files, extra_env=env, unset=_SDK_ADDED
        )
    except (SandboxUnavailable, NotConfinable) as error:
        raise McpError(f"MCP server {label} failed to start: {error}") from None
    return confined.argv[0], list(confined.argv[1:]), confined.env


#: Programs that start a server rather than name it (``python server.py``, ``npx -y pkg``).
_LAUNCHERS = re.compile(
    r"(?:python[0-9.]*|pypy[0-9.]*|node|npx|uvx|uv|bunx?|deno|pipx|env|sh|bash|docker|podman"
    r"|run|tool|exec|x)"
)
_SUFFIX = re.compile(r"\.(?:py|js|mjs|cjs|ts|sh|exe)$")


def default_name(argv: Sequence[str]) -> str:
    """A server's name when none is given, made from its command (never from what the
    server says of itself): the first word that is not a launcher or an option, its last
    path part, without a script suffix. ``python tools/notes.py`` -> ``notes``,
    ``npx -y @modelcontextprotocol/server-github`` -> ``server-github``."""
    for arg in argv:
        if arg == "-c":  # inline code names nothing
            break
        base = arg.rstrip("/").rsplit("/", 1)[-1]
        if not base or arg.startswith("-") or "=" in arg or _LAUNCHERS.fullmatch(base):
            continue
        cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", _SUFFIX.sub("", base)).strip("-._")[:64]
        if cleaned:
            return cleaned
    return "mcp"


def _url_name(url: str) -> str:
    """``http://127.0.0.1:8000/mcp`` -> ``127.0.0.1-8000``: where the server listens."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "mcp"
    host = re.sub(r"[^A-Za-z0-9_.-]+", "-", parts.hostname or "").strip("-._")
    return (f"{host}-{port}" if port else host)[:64] or "mcp"


def _param_order(schema: JSONObject) -> tuple[str, ...]:
    """The schema's properties, required ones first: the order ``tool[a, b]`` binds in."""
    props = schema.get("properties")
    names = list(props) if isinstance(props, dict) else []
    listed = schema.get("required")
    listed = listed if isinstance(listed, list) else []
    required = [p for p in listed if isinstance(p, str) and p in names]
    return (*required, *(p for p in names if p not in required))


def _describe(error: BaseException) -> str:
    """The innermost useful message of an error, exception groups included."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return str(error) or type(error).__name__


def mcp_tools(servers: Iterable[McpServer]) -> list[Tool]:
    """All tools of several servers; a name two servers (or two of their tools) share is an
    error naming both: a policy entry must name one server's tools."""
    owners: dict[str, McpServer] = {}
    names: dict[str, McpServer] = {}
    tools: list[Tool] = []
    for server in servers:
        if server.name in names:
            raise McpError(
                f"MCP servers {names[server.name].label} and {server.label} are both named "
                f"{server.name!r}; name them (--mcp 'NAME=COMMAND', or name=...)"
            )
        names[server.name] = server
        for item in server.tools():
            if item.name in owners:
                raise McpError(
                    f"MCP servers {owners[item.name].label} and {server.label} both have a tool "
                    f"named {item.name!r}; start one with a prefix"
                )
            owners[item.name] = server
            tools.append(item)
    return tools
