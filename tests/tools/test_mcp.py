"""Tools from MCP servers (SPEC T3): a real server process built with the SDK, over stdio and HTTP.

One stdio server is shared by most tests (a start costs about a second); the
tests that stop, break or time out a server start their own.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from mcp.types import CallToolResult, ImageContent, ResourceLink, TextContent

from tao.approval.mcp_rules import McpRules
from tao.approval.policy import Policy
from tao.errors import ToolError
from tao.sandbox import SERVER_LIMITS, Sandbox
from tao.state.jsontypes import JSON
from tao.tools.base import ArgumentError
from tao.tools.mcp import McpError, McpServer, McpTool, mcp_tools
from tao.tools.mcp_tool import AnyArgs, result_text, safe_name

from ..conftest import CliResult

SERVER = '''
import asyncio, os, sys
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

if os.environ.get("PID_FILE"):
    with open(os.environ["PID_FILE"], "w") as f:
        f.write(str(os.getpid()))
print("test server starting; this line must not reach the terminal", file=sys.stderr)
server = MCPServer("tao-test", log_level="ERROR")

@server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

@server.tool(name="send-note")
def send_note(to: str, text: str = "") -> str:
    """Send a note to someone."""
    return f"sent to {to}: {text}"

@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
def delete_note(note_id: int) -> str:
    """Delete a note for good."""
    return f"deleted {note_id}"

@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def lookup(key: str) -> str:
    """Look a key up; unknown keys are an error."""
    raise ToolError(f"no such key: {key}")

@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def slow(seconds: float) -> str:
    """Answer after a while."""
    await asyncio.sleep(seconds)
    return "late"

if __name__ == "__main__":
    if len(sys.argv) > 1:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
    else:
        server.run()
'''

ADD_SCRIPT = ["Thought: add them.\nAction: add(a=2, b=3)", "Thought: done.\nAction: finish[5]"]
#: The person's policy calls the server's add and lookup read-only (SPEC S3): the server's
#: word alone does not (``server`` is the name made from ``python .../server.py``).
READS = Policy(mcp=McpRules.of(read_only=["server:add", "server:lookup"]))


@pytest.fixture(scope="module")
def server_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mcp") / "server.py"
    path.write_text(SERVER, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def server(server_script: Path) -> Iterator[McpServer]:
    with McpServer.stdio([sys.executable, str(server_script)]) as live:
        yield live


@pytest.fixture(scope="module")
def tools(server: McpServer) -> dict[str, McpTool]:
    return {t.name: t for t in server.tools() if isinstance(t, McpTool)}


def write_replay(tmp_path: Path, replies: Sequence[JSON]) -> Path:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(replies), encoding="utf-8")
    return path


def test_tools_arrive_with_the_servers_schemas(tools: dict[str, McpTool]) -> None:
    assert set(tools) == {"add", "send_note", "delete_note", "lookup", "slow"}
    add = tools["add"]
    assert add.description == "Add two integers."
    assert add.schema["properties"]["a"]["type"] == "integer"
    assert add.schema["required"] == ["a", "b"]
    assert add.param_names == ("a", "b")
    assert tools["send_note"].param_names == ("to", "text")  # required first


def test_names_are_identifiers_and_calls_use_the_real_name(tools: dict[str, McpTool]) -> None:
    note = tools["send_note"]
    assert (note.name, note.remote_name) == ("send_note", "send-note")
    assert note.invoke(note.bind("bob")) == "sent to bob: "
    assert (safe_name("get-weather"), safe_name("2fa.check")) == ("get_weather", "t_2fa_check")


def test_every_tool_asks_until_a_policy_says_read_only_S3(tools: dict[str, McpTool]) -> None:
    """The server's readOnlyHint is its word, kept as a hint; the tool is an effect."""
    assert tools["add"].effects == ("sends",) and not tools["add"].read_only
    assert tools["add"].hints.read_only and tools["add"].policy_name == "server:add"
    assert tools["send_note"].effects == ("sends",) and not tools["send_note"].read_only
    assert tools["delete_note"].effects == ("deletes",)
    judged = tools["add"].judged(READS.mcp)
    assert judged.read_only and judged.approval_note is None


def test_a_read_only_tool_of_the_open_world_is_volatile_L12(tools: dict[str, McpTool]) -> None:
    """MCP's openWorldHint defaults to true: the world may answer anew, so a repeated call
    runs again (``Tool.volatile``); a closed-world one is answered from its first call."""
    assert tools["lookup"].volatile and tools["slow"].volatile
    assert not tools["add"].volatile


def test_bracket_call_and_json_forms_bind(tools: dict[str, McpTool]) -> None:
    add, note = tools["add"], tools["send_note"]
    assert add.invoke(add.bind("a=2, b=3", "call")) == "5"
    assert add.invoke(add.bind("2, 3", "call")) == "5"
    assert add.invoke(add.bind('{"a": 4, "b": 5}')) == "9"
    assert note.bind('"alice"') == {"to": "alice"}
    assert note.bind('{"to": "x", "text": "hi"}', "bracket") == {"to": "x", "text": "hi"}
    assert tools["delete_note"].validate(tools["delete_note"].bind("7")) == {"note_id": 7}


def test_validation_errors_are_clear(tools: dict[str, McpTool]) -> None:
    add = tools["add"]
    with pytest.raises(ArgumentError, match=r"add\(a, b\).*'b' is a required property"):
        add.validate({"a": 1})
    with pytest.raises(ArgumentError, match=r"a: 'x' is not of type 'integer'"):
        add.validate({"a": "x", "b": 1})
    with pytest.raises(ArgumentError, match=r"unknown argument\(s\) c"):
        add.validate({"a": 1, "b": 2, "c": 3})


def test_only_json_goes_on_the_wire_S1() -> None:
    """A schema that says nothing about a value still cannot send what JSON cannot hold."""
    sent: list[dict[str, object]] = []

    def run(**arguments: object) -> str:
        sent.append(arguments)
        return "ok"

    echo = McpTool(
        name="echo",
        description="Echo anything.",
        fn=run,
        params=AnyArgs,
        param_names=("value",),
        input_schema={"type": "object", "properties": {"value": {}}},
    )
    assert echo.invoke(echo.bind("value=(1, 2)", "call")) == "ok"
    assert sent == [{"value": [1, 2]}]  # a tuple literal is a JSON array
    with pytest.raises(ArgumentError, match=r"echo\(value\): \{1, 2\} is not a JSON value"):
        echo.invoke(echo.bind("value={1, 2}", "call"))
    assert len(sent) == 1  # refused before the call


def test_is_error_result_raises_tool_error(tools: dict[str, McpTool]) -> None:
    with pytest.raises(ToolError, match="no such key: nope"):
        tools["lookup"].invoke({"key": "nope"})


def test_agent_run_shows_observations_and_gates_side_effects(
    server: McpServer, tmp_path: Path
) -> None:
    script = write_replay(
        tmp_path,
        [
            "Thought: add.\nAction: add(a=2, b=3)",
            "Thought: look.\nAction: lookup[nope]",
            'Thought: tell.\nAction: send_note(to="bob", text="5")',
            "Action: finish[5]",
        ],
    )
    from tao import Agent  # the agent run is the integration; the rest needs only the SDK

    tools = [*server.tools(), "calc"]
    agent = Agent(f"replay:{script}", tools, record=False, max_steps=6, policy=READS)
    paused = agent.run("What is 2 + 3?")
    assert paused.status.value == "awaiting_approval"  # a "sends" tool waits for a person (S3)
    assert paused.pending is not None and paused.pending[0].tool == "send_note"
    result = agent.resume(paused, approve=False)
    observations = [step.observation for step in result.steps]
    assert result.answer == "5"
    assert observations[0] == "5"
    assert observations[1] is not None and observations[1].startswith("Error:")
    assert observations[1].endswith("no such key: nope")  # isError text, as the server wrote it
    assert observations[2] is not None and observations[2].startswith("Error:")
    assert "a person denied send_note (sends)" in observations[2]


def test_native_protocol_sends_the_schema_and_runs_the_call(
    server: McpServer, tmp_path: Path
) -> None:
    from tao import Agent
    from tao.protocol.native import tool_specs

    tools = server.tools()
    add_spec = next(spec for spec in tool_specs(tools) if spec.name == "add")
    assert add_spec.parameters["required"] == ["a", "b"]
    call = {"name": "add", "arguments": {"a": 2, "b": 3}}
    script = write_replay(
        tmp_path,
        [
            {"content": "Adding.", "tool_calls": [call]},
            {"content": "", "tool_calls": [{"name": "finish", "arguments": {"answer": "5"}}]},
        ],
    )
    agent = Agent(f"replay:{script}", tools, protocol="native", record=False, policy=READS)
    result = agent.run("2 + 3?")
    assert (result.answer, result.steps[0].arguments, result.steps[0].observation) == (
        "5",
        {"a": 2, "b": 3},
        "5",
    )


def test_a_hung_call_becomes_an_error_not_a_hang(
    server: McpServer, tools: dict[str, McpTool], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server, "call_timeout", 0.5)
    started = time.monotonic()
    with pytest.raises(ToolError, match=r"no answer .* within 0.5s"):
        tools["slow"].invoke({"seconds": 3})
    assert time.monotonic() - started < 2
    monkeypatch.setattr(server, "call_timeout", 30)
    assert tools["add"].invoke({"a": 1, "b": 1}) == "2"  # the connection survives


def test_usable_from_inside_a_running_event_loop(tools: dict[str, McpTool]) -> None:
    async def main() -> str:
        return tools["add"].invoke({"a": 20, "b": 22})

    assert asyncio.run(main()) == "42"


def test_names_clashing_across_servers_are_an_error(server: McpServer, server_script: Path) -> None:
    """A tool name, and a server name (what a policy's SERVER:TOOL names, SPEC S3), belong
    to one server."""
    with pytest.raises(McpError, match="are both named 'server'; name them"):
        mcp_tools([server, server])
    with (
        McpServer.stdio([sys.executable, str(server_script)], name="other") as other,
        pytest.raises(McpError, match="both have a tool named 'add'"),
    ):
        mcp_tools([server, other])


def test_other_content_becomes_a_placeholder() -> None:
    result = CallToolResult(
        content=[
            TextContent(text="chart:"),
            ImageContent(data="AAAA", mime_type="image/png"),
            ResourceLink(name="r", uri="file:///tmp/r.txt"),
        ]
    )
    assert result_text(result) == (
        "chart:\n[image: image/png, not shown]\n[resource link: file:///tmp/r.txt]"
    )


def _running_with(token: str) -> list[int]:
    """Host pids of live (not zombie) processes whose command line holds ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if token.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def test_close_ends_the_server_process(server_script: Path, tmp_path: Path) -> None:
    """The server runs in its own PID namespace (SPEC S10): it is found on the host by its
    command line (its own copy of the script), and writes only where it was let."""
    script = tmp_path / "own_server.py"
    script.write_text(server_script.read_text())
    pid_file = tmp_path / "pid"
    live = McpServer.stdio(
        f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}",
        env={"PID_FILE": str(pid_file)},
        sandbox=Sandbox(writable=(tmp_path,), limits=SERVER_LIMITS),
    )
    add = next(t for t in live.tools() if t.name == "add")
    assert pid_file.read_text().isdigit()
    assert _running_with(str(script))  # alive while connected
    live.close()
    deadline = time.monotonic() + 5
    while _running_with(str(script)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running_with(str(script)) == []
    with pytest.raises(McpError, match="not connected"):
        add.invoke({"a": 1, "b": 2})
    live.close()  # idempotent


def test_a_server_that_fails_to_start_says_why() -> None:
    crash = [
        sys.executable,
        "-c",
        "import sys; print('missing config', file=sys.stderr); sys.exit(2)",
    ]
    with pytest.raises(McpError, match=r"failed to start.*missing config"):
        McpServer.stdio(crash)
    with pytest.raises(McpError, match="failed to start"):
        McpServer.stdio("/nonexistent/mcp-server --flag")


def test_cli_run_uses_mcp_tools(
    tao_cli: Callable[..., CliResult], server_script: Path, tmp_path: Path, tao_home: Path
) -> None:
    tao_home.mkdir(parents=True, exist_ok=True)
    (tao_home / "policy.toml").write_text('[mcp]\nread_only = ["server:add"]\n')
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(server_script))}"
    script = write_replay(tmp_path, ADD_SCRIPT)
    out = tao_cli(
        "run", "What is 2 + 3?", "--mcp", command, "--model", f"replay:{script}",
        "--tools", "calc", "--json", timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = out.json()
    step = data["steps"][0]
    assert (step["tool"], step["arguments"], step["observation"]) == ("add", {"a": 2, "b": 3}, "5")
    assert data["answer"] == "5"
    assert "must not reach the terminal" not in out.stderr


def test_cli_reports_a_broken_server_in_one_line(tao_cli: Callable[..., CliResult]) -> None:
    out = tao_cli("run", "hi", "--mcp", "/nonexistent/mcp-server", "--model", "replay:x.json")
    assert out.returncode == 1
    assert out.stderr.startswith("Error: MCP server /nonexistent/mcp-server failed to start")
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_streamable_http(
    server_script: Path,
    tao_cli: Callable[..., CliResult],
    tao_home: Path,
    replay: Callable[[list[str]], Path],
) -> None:
    """Over HTTP too; ``--mcp-url NAME=URL`` names the server for the policy (SPEC S3)."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, str(server_script), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert process.poll() is None, "the HTTP server exited"
                assert time.monotonic() < deadline, "the HTTP server did not start in 15 s"
                time.sleep(0.1)
        with McpServer.http(f"http://127.0.0.1:{port}/mcp") as remote:
            tools = {t.name: t for t in remote.tools() if isinstance(t, McpTool)}
            assert tools["add"].policy_name == f"127.0.0.1-{port}:add"  # its name: where it is
            assert not tools["add"].read_only and tools["add"].hints.read_only
            assert tools["add"].invoke(tools["add"].bind("a=40, b=2", "call")) == "42"
            with pytest.raises(ToolError, match="no such key"):
                tools["lookup"].invoke({"key": "k"})
        tao_home.mkdir(parents=True, exist_ok=True)
        (tao_home / "policy.toml").write_text('[mcp]\nread_only = ["remote:add"]\n')
        url = f"remote=http://127.0.0.1:{port}/mcp"
        out = tao_cli("run", "2 + 3?", "--mcp-url", url, "--model", f"replay:{replay(ADD_SCRIPT)}",
                      "--json", timeout=60)  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert out.json()["steps"][0]["observation"] == "5"  # read-only by the policy: unasked
    finally:
        process.terminate()
        process.wait(timeout=10)
