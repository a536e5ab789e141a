"""Per-step framework overhead of tao and its peers, measured side by side in one run.

Every framework drives the same scripted, zero-latency model through the same two
tools for the same number of steps. What remains of an episode's wall time once the
scripted model's own time is taken out is the framework: prompt building, parsing,
tool dispatch, bookkeeping. Each framework runs in a child process of its own (from
the project venv for tao, from ``bench/.peers-venv`` for the peers), which also
measures its import time and its peak memory.

    python bench/overhead.py                  # all frameworks, installs the peers' venv once
    python bench/overhead.py --quick --json   # tao only unless the peers' venv exists (CI)

Peers are never project dependencies: they are pinned in ``bench/peers-requirements.txt``
and installed into ``bench/.peers-venv`` (gitignored) by this script.

Only the standard library is imported at the top, so the same file runs as the child in
either virtual environment (``--child NAME``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import venv
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tao.store.factory import open_store

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PEERS_VENV = BENCH / ".peers-venv"
PEERS_REQUIREMENTS = BENCH / "peers-requirements.txt"

#: The frameworks in table order; the first two are tao itself (without and with the run log).
FRAMEWORKS = (
    "tao",
    "tao_recorded",
    "langgraph",
    "langchain_agent",
    "langchain",
    "smolagents",
    "dspy",
)
PEERS = ("langgraph", "langchain_agent", "langchain", "smolagents", "dspy")
LABELS = {
    "tao": "tao (record=False)",
    "tao_recorded": "tao (record=True, SQLite)",
    "langgraph": "LangGraph create_react_agent",
    "langchain_agent": "LangChain create_agent (on LangGraph)",
    "langchain": "LangChain AgentExecutor (text ReAct)",
    "smolagents": "smolagents ToolCallingAgent",
    "dspy": "dspy.ReAct",
}

# --------------------------------------------------------------------------------------
# The scripted episode, identical for every framework
# --------------------------------------------------------------------------------------

TABLE = {f"k{i}": f"value number {i}" for i in range(64)}
ANSWER = "done"


def lookup(key: str) -> str:
    """Look up a key in the table.

    Args:
        key: The key to look up, e.g. "k3".
    """
    return TABLE.get(key.strip(), "missing")


def length(text: str) -> str:
    """Count the characters of a text.

    Args:
        text: The text to measure.
    """
    return str(len(text))


@dataclass(frozen=True)
class Move:
    """One scripted model turn: a tool call, or (tool ``None``) the final answer."""

    thought: str
    tool: str | None
    param: str
    arg: str


def script(steps: int) -> list[Move]:
    """``steps - 1`` tool calls alternating between the two tools, then the answer."""
    moves = []
    for i in range(steps - 1):
        if i % 2 == 0:
            moves.append(Move(f"I need the value of k{i}.", "lookup", "key", f"k{i}"))
        else:
            moves.append(Move(f"I need the length of text {i}.", "length", "text", f"text {i}"))
    moves.append(Move("I now know the final answer.", None, "answer", ANSWER))
    return moves


class Clock:
    """The scripted model's own time, so that it can be taken out of the episode's."""

    def __init__(self) -> None:
        self.model_s = 0.0
        self.calls = 0

    def reset(self) -> None:
        self.model_s, self.calls = 0.0, 0


class Cursor:
    """Which scripted move comes next; the harness rewinds it before each episode."""

    def __init__(self, moves: list[Move], clock: Clock) -> None:
        self.moves, self.clock, self.index = moves, clock, 0

    def rewind(self) -> None:
        self.index = 0
        self.clock.reset()

    def next(self) -> Move:
        move = self.moves[min(self.index, len(self.moves) - 1)]
        self.index += 1
        self.clock.calls += 1
        return move


@dataclass
class Harness:
    """What a framework adapter hands back: how to run one episode, and its cursor."""

    run_episode: Callable[[], Any]
    cursor: Cursor | None
    #: Model calls per episode beyond the scripted moves (dspy.ReAct's final extract call).
    extra_calls: int = 0
    #: Called before each episode (outside the timed region), e.g. to build a fresh dummy LM.
    prepare: Callable[[], None] | None = None


# --------------------------------------------------------------------------------------
# Adapters: each imports its framework and builds an agent around a scripted model
# --------------------------------------------------------------------------------------


def import_tao() -> None:
    import tao  # noqa: F401
    from tao.agent import Agent  # noqa: F401


def build_tao(moves: list[Move], clock: Clock, *, recorded: bool) -> Harness:
    from tao import tool
    from tao.agent import Agent
    from tao.models.base import ModelReply

    cursor = Cursor(moves, clock)

    class ScriptedModel:
        name = "scripted"
        supports_stop = True
        supports_grammar = False
        supports_tools = False

        def complete(self, request: Any, on_text: Any = None) -> ModelReply:
            started = time.perf_counter()
            move = cursor.next()
            if move.tool is None:
                text = f"Thought: {move.thought}\nAction: finish[{move.arg}]"
            else:
                text = f"Thought: {move.thought}\nAction: {move.tool}[{move.arg}]"
            reply = ModelReply(text=text)
            clock.model_s += time.perf_counter() - started
            return reply

    record: Any = False
    if recorded:
        folder = tempfile.mkdtemp(prefix="tao-bench-")
        record = open_store(Path(folder) / "runs.db")
    agent = Agent(
        ScriptedModel(),
        [tool(lookup), tool(length)],
        max_steps=len(moves) + 2,
        max_tokens=10**9,
        record=record,
    )

    def run() -> Any:
        result = agent.run("Look up the values and measure the texts.")
        assert result.answer == ANSWER, result.status
        return result

    return Harness(run, cursor)


def import_langgraph() -> None:
    from langchain_core.language_models.chat_models import BaseChatModel  # noqa: F401
    from langgraph.prebuilt import create_react_agent  # noqa: F401


def scripted_chat_model(cursor: Cursor, clock: Clock) -> Any:
    """A LangChain ``BaseChatModel`` that answers with the next move as a native tool call."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class ScriptedChatModel(BaseChatModel):  # type: ignore[misc]
        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> ChatResult:
            started = time.perf_counter()
            move = cursor.next()
            if move.tool is None:
                message = AIMessage(content=move.arg)
            else:
                call = {
                    "name": move.tool,
                    "args": {move.param: move.arg},
                    "id": f"call_{cursor.index}",
                    "type": "tool_call",
                }
                message = AIMessage(content=move.thought, tool_calls=[call])
            result = ChatResult(generations=[ChatGeneration(message=message)])
            clock.model_s += time.perf_counter() - started
            return result

    return ScriptedChatModel()


def build_langgraph(moves: list[Move], clock: Clock, *, create_agent: bool = False) -> Harness:
    from langchain_core.tools import tool

    cursor = Cursor(moves, clock)
    model = scripted_chat_model(cursor, clock)
    tools = [tool(lookup), tool(length)]
    if create_agent:
        from langchain.agents import create_agent as create

        graph = create(model, tools)
    else:
        from langgraph.prebuilt import create_react_agent

        graph = create_react_agent(model, tools)
    config = {"recursion_limit": 4 * len(moves) + 10}

    def run() -> Any:
        state = graph.invoke(
            {"messages": [("user", "Look up the values and measure the texts.")]}, config
        )
        assert state["messages"][-1].content == ANSWER
        return state

    return Harness(run, cursor)


def import_langchain_agent() -> None:
    from langchain.agents import create_agent  # noqa: F401
    from langchain_core.language_models.chat_models import BaseChatModel  # noqa: F401


REACT_PROMPT = """Answer the following questions as best you can. You have access to the following tools:

{tools}

Use the following format:

Question: the input question you must answer
Thought: you should always think about what to do
Action: the action to take, should be one of [{tool_names}]
Action Input: the input to the action
Observation: the result of the action
... (this Thought/Action/Action Input/Observation can repeat N times)
Thought: I now know the final answer
Final Answer: the final answer to the original input question

Begin!

Question: {input}
Thought:{agent_scratchpad}"""  # noqa: E501  (hwchase17/react, the prompt the LangChain docs use)


def import_langchain() -> None:
    from langchain_classic.agents import AgentExecutor, create_react_agent  # noqa: F401
    from langchain_core.language_models.llms import LLM  # noqa: F401


def build_langchain(moves: list[Move], clock: Clock) -> Harness:
    from langchain_classic.agents import AgentExecutor, create_react_agent
    from langchain_core.language_models.llms import LLM
    from langchain_core.prompts import PromptTemplate
    from langchain_core.tools import tool

    cursor = Cursor(moves, clock)

    class ScriptedLLM(LLM):  # type: ignore[misc]
        """Answers with the next scripted move in the text ReAct format."""

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def _call(self, prompt: str, stop: Any = None, run_manager: Any = None, **_: Any) -> str:
            started = time.perf_counter()
            move = cursor.next()
            if move.tool is None:
                text = f" {move.thought}\nFinal Answer: {move.arg}"
            else:
                text = f" {move.thought}\nAction: {move.tool}\nAction Input: {move.arg}"
            clock.model_s += time.perf_counter() - started
            return text

    tools = [tool(lookup), tool(length)]
    prompt = PromptTemplate.from_template(REACT_PROMPT)
    agent = create_react_agent(ScriptedLLM(), tools, prompt)
    executor = AgentExecutor(agent=agent, tools=tools, max_iterations=len(moves) + 2)

    def run() -> Any:
        output = executor.invoke({"input": "Look up the values and measure the texts."})
        assert output["output"] == ANSWER, output
        return output

    return Harness(run, cursor)


def import_smolagents() -> None:
    from smolagents import Model, ToolCallingAgent  # noqa: F401


def build_smolagents(moves: list[Move], clock: Clock) -> Harness:
    from smolagents import Model, ToolCallingAgent, tool
    from smolagents.models import (
        ChatMessage,
        ChatMessageToolCall,
        ChatMessageToolCallFunction,
        MessageRole,
    )
    from smolagents.monitoring import LogLevel, TokenUsage

    cursor = Cursor(moves, clock)

    class ScriptedModel(Model):  # type: ignore[misc]
        """Answers with the next scripted move as a native tool call."""

        def generate(self, messages: Any, stop_sequences: Any = None, **_: Any) -> ChatMessage:
            started = time.perf_counter()
            move = cursor.next()
            name, arguments = (
                ("final_answer", {"answer": move.arg})
                if move.tool is None
                else (move.tool, {move.param: move.arg})
            )
            call = ChatMessageToolCall(
                function=ChatMessageToolCallFunction(name=name, arguments=arguments),
                id=f"call_{cursor.index}",
                type="function",
            )
            message = ChatMessage(
                role=MessageRole.ASSISTANT,
                content=move.thought,
                tool_calls=[call],
                token_usage=TokenUsage(input_tokens=0, output_tokens=0),
            )
            clock.model_s += time.perf_counter() - started
            return message

    agent = ToolCallingAgent(
        tools=[tool(lookup), tool(length)],
        model=ScriptedModel(model_id="scripted"),
        max_steps=len(moves) + 2,
        verbosity_level=LogLevel.OFF,
    )

    def run() -> Any:
        answer = agent.run("Look up the values and measure the texts.")
        assert answer == ANSWER, answer
        return answer

    return Harness(run, cursor)


def import_dspy() -> None:
    import dspy  # noqa: F401
    from dspy.utils.dummies import DummyLM  # noqa: F401


def build_dspy(moves: list[Move], clock: Clock) -> Harness:
    import dspy
    from dspy.utils.dummies import DummyLM

    answers: list[dict[str, Any]] = [
        {
            "next_thought": move.thought,
            "next_tool_name": move.tool or "finish",
            "next_tool_args": {move.param: move.arg} if move.tool else {},
        }
        for move in moves
    ]
    answers.append({"reasoning": "The trajectory has it.", "answer": ANSWER})
    react = dspy.ReAct("question -> answer", tools=[lookup, length], max_iters=len(moves) + 2)
    holder: dict[str, Any] = {}

    def prepare() -> None:
        # DummyLM consumes its answers; a fresh one per episode, built outside the timing.
        lm = DummyLM(list(answers))
        engine = lm._engine_spec
        scripted = engine._complete_messages

        def timed(messages: Any) -> Any:  # the dummy's own work is the "model"
            started = time.perf_counter()
            response = scripted(messages)
            clock.model_s += time.perf_counter() - started
            clock.calls += 1
            return response

        engine._complete_messages = timed
        holder["lm"] = lm
        clock.reset()

    def run() -> Any:
        with dspy.context(lm=holder["lm"]):
            prediction = react(question="Look up the values and measure the texts.")
        assert prediction.answer == ANSWER, prediction
        return prediction

    return Harness(run, None, extra_calls=1, prepare=prepare)


IMPORTS: dict[str, Callable[[], None]] = {
    "tao": import_tao,
    "tao_recorded": import_tao,
    "langgraph": import_langgraph,
    "langchain_agent": import_langchain_agent,
    "langchain": import_langchain,
    "smolagents": import_smolagents,
    "dspy": import_dspy,
}


def build(name: str, moves: list[Move], clock: Clock) -> Harness:
    if name in ("tao", "tao_recorded"):
        return build_tao(moves, clock, recorded=name == "tao_recorded")
    builders: dict[str, Callable[[list[Move], Clock], Harness]] = {
        "langgraph": build_langgraph,
        "langchain_agent": lambda moves, clock: build_langgraph(moves, clock, create_agent=True),
        "langchain": build_langchain,
        "smolagents": build_smolagents,
        "dspy": build_dspy,
    }
    return builders[name](moves, clock)


# --------------------------------------------------------------------------------------
# The child: import, build, warm up, measure; one JSON object on stdout
# --------------------------------------------------------------------------------------


def peak_mb() -> float:
    """Peak resident set size of this process (``ru_maxrss`` is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(name: str, episodes: int, steps: int, warmup: int, max_seconds: float) -> dict[str, Any]:
    import warnings

    warnings.simplefilter("ignore")
    started = time.perf_counter()
    IMPORTS[name]()
    import_s = time.perf_counter() - started
    import_mb = peak_mb()
    moves = script(steps)
    clock = Clock()
    harness = build(name, moves, clock)
    per_step: list[float] = []
    model_share: list[float] = []
    budget_end = time.perf_counter() + max_seconds
    for episode in range(warmup + episodes):
        if harness.prepare is not None:
            harness.prepare()
        if harness.cursor is not None:
            harness.cursor.rewind()
        begin = time.perf_counter()
        harness.run_episode()
        elapsed = time.perf_counter() - begin
        expected = len(moves) + harness.extra_calls
        if clock.calls != expected:
            raise RuntimeError(f"{name}: {clock.calls} model calls, expected {expected}")
        if episode >= warmup:
            per_step.append((elapsed - clock.model_s) / steps * 1e6)
            model_share.append(clock.model_s / elapsed)
            if time.perf_counter() > budget_end and len(per_step) >= 5:
                break
    return {
        "framework": name,
        "python": sys.version.split()[0],
        "import_s": import_s,
        "import_peak_mb": import_mb,
        "peak_mb": peak_mb(),
        "us_per_step": statistics.median(per_step),
        "us_per_step_p10": _quantile(per_step, 0.1),
        "us_per_step_p90": _quantile(per_step, 0.9),
        "model_share": statistics.median(model_share),
        "episodes": len(per_step),
        "steps": steps,
        "samples": per_step,
    }


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# --------------------------------------------------------------------------------------
# The parent: peers' venv, one child per framework, table and JSON
# --------------------------------------------------------------------------------------


def peers_python() -> Path:
    return PEERS_VENV / "bin" / "python"


def ensure_peers_venv() -> None:
    """Create ``bench/.peers-venv`` with the pinned peers, once."""
    if peers_python().exists():
        return
    print(f"creating {PEERS_VENV} (pinned peers, one-off) ...", file=sys.stderr)
    venv.EnvBuilder(with_pip=True).create(PEERS_VENV)
    subprocess.run(
        [str(peers_python()), "-m", "pip", "install", "-q", "-r", str(PEERS_REQUIREMENTS)],
        check=True,
    )


def peer_versions() -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json\n"
        "names = ['langgraph', 'langgraph-prebuilt', 'langchain', 'langchain-core',"
        " 'langchain-classic', 'smolagents', 'dspy']\n"
        "out = {}\n"
        "for n in names:\n"
        "    try: out[n] = m.version(n)\n"
        "    except m.PackageNotFoundError: pass\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run([str(peers_python()), "-c", code], capture_output=True, text=True)
    return json.loads(done.stdout) if done.returncode == 0 else {}


def run_child(
    name: str, python: Path, episodes: int, steps: int, warmup: int, max_seconds: float
) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGCHAIN_", "LANGSMITH_"))}
    env["PYTHONDONTWRITEBYTECODE"] = "0"
    command = [
        str(python),
        str(Path(__file__).resolve()),
        "--child",
        name,
        "--episodes",
        str(episodes),
        "--steps",
        str(steps),
        "--warmup",
        str(warmup),
        "--max-seconds",
        str(max_seconds),
    ]
    with tempfile.TemporaryDirectory(prefix="tao-bench-home-") as home:
        env["DSPY_CACHEDIR"] = home  # keep dspy's disk cache out of the user's home
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=home)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise RuntimeError(f"{name} child failed: " + " | ".join(tail))
    data: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return data


#: What ``import`` costs a user: the package alone, and everything a run needs.
IMPORT_STATEMENTS = {"import_tao": "import tao", "import_tao_agent": "from tao import Agent, tool"}


def import_times(python: Path, repeats: int) -> dict[str, float]:
    """Median wall time of each statement in a fresh interpreter, less a bare interpreter.

    Also the median cumulative time ``python -X importtime`` gives the top-level ``tao``
    module (that clock runs slower: it times every import it logs).
    """

    def wall(code: str) -> float:
        began = time.perf_counter()
        subprocess.run([str(python), "-c", code], check=True, capture_output=True)
        return time.perf_counter() - began

    def importtime(code: str) -> float:
        """Sum of the top-level imports from ``tao`` on (later ones are lazy loads)."""
        done = subprocess.run(
            [str(python), "-X", "importtime", "-c", code],
            check=True,
            capture_output=True,
            text=True,
        )
        total, seen = 0, False
        for line in done.stderr.splitlines():
            parts = line.split("|")
            if len(parts) != 3 or not parts[1].strip().isdigit():
                continue
            top_level = parts[2].startswith(" ") and not parts[2].startswith("  ")
            seen = seen or (top_level and parts[2].strip() == "tao")
            if seen and top_level:
                total += int(parts[1])
        return total / 1e6

    times: dict[str, list[float]] = {"bare": []}
    for _ in range(repeats):  # interleaved, so that load on the machine hits all alike
        times["bare"].append(wall("pass"))
        for key, code in IMPORT_STATEMENTS.items():
            times.setdefault(key, []).append(wall(code))
            times.setdefault(f"{key}_importtime", []).append(importtime(code))
    bare = statistics.median(times.pop("bare"))
    out = {"python_startup_s": round(bare, 4)}
    for key, values in times.items():
        value = statistics.median(values)
        out[f"{key}_s"] = round(value if key.endswith("_importtime") else value - bare, 4)
    return out


def merge(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One framework over several rounds: medians over every episode of every round."""
    samples = [x for r in rounds for x in r["samples"]]
    return {
        **rounds[0],
        "import_s": statistics.median(r["import_s"] for r in rounds),
        "import_peak_mb": max(r["import_peak_mb"] for r in rounds),
        "peak_mb": max(r["peak_mb"] for r in rounds),
        "us_per_step": statistics.median(samples),
        "us_per_step_p10": _quantile(samples, 0.1),
        "us_per_step_p90": _quantile(samples, 0.9),
        "model_share": statistics.median(r["model_share"] for r in rounds),
        "episodes": len(samples),
        "rounds": len(rounds),
        "samples": None,
    }


def summarize(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The flat JSON object: ``NAME_us_per_step``, ``NAME_import_s``, ``NAME_peak_mb``, ratios."""
    flat: dict[str, Any] = {}
    for name, data in results.items():
        flat[f"{name}_us_per_step"] = round(data["us_per_step"], 1)
        flat[f"{name}_import_s"] = round(data["import_s"], 4)
        flat[f"{name}_peak_mb"] = round(data["peak_mb"], 1)
    tao = results["tao"]["us_per_step"]
    for name in PEERS:
        if name in results:
            flat[f"{name}_over_tao"] = round(results[name]["us_per_step"] / tao, 1)
    if "tao_recorded" in results:
        recorded = results["tao_recorded"]["us_per_step"]
        for name in PEERS:
            if name in results:
                flat[f"{name}_over_tao_recorded"] = round(
                    results[name]["us_per_step"] / recorded, 1
                )
    if "langgraph" in results:
        flat["goal_langgraph_20x"] = results["langgraph"]["us_per_step"] >= 20 * tao
    if "smolagents" in results:
        flat["goal_smolagents_10x"] = results["smolagents"]["us_per_step"] >= 10 * tao
    return flat


def table(results: dict[str, dict[str, Any]]) -> str:
    tao = results["tao"]["us_per_step"]
    rows = [
        "| framework | µs/step (median) | p10–p90 | × tao | import s | peak RSS MB | episodes |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, data in results.items():
        rows.append(
            f"| {LABELS[name]} | {data['us_per_step']:,.0f} | "
            f"{data['us_per_step_p10']:,.0f}–{data['us_per_step_p90']:,.0f} | "
            f"{data['us_per_step'] / tao:.1f} | {data['import_s']:.3f} | "
            f"{data['peak_mb']:.0f} | {data['episodes']} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few episodes; peers only if ready")
    parser.add_argument("--json", action="store_true", help="last line: one JSON object")
    parser.add_argument("--no-peers", action="store_true", help="measure tao only")
    parser.add_argument("--only", nargs="+", choices=FRAMEWORKS, help="these frameworks only")
    parser.add_argument("--episodes", type=int, default=None)
    parser.add_argument("--steps", type=int, default=10, help="model calls per episode")
    parser.add_argument("--warmup", type=int, default=None)
    parser.add_argument("--max-seconds", type=float, default=None, help="per framework")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds")
    parser.add_argument("--out", type=Path, help="also write the full results as JSON here")
    parser.add_argument("--child", choices=FRAMEWORKS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    episodes = args.episodes or (5 if args.quick else 300)
    warmup = args.warmup if args.warmup is not None else (1 if args.quick else 10)
    max_seconds = args.max_seconds or (5.0 if args.quick else 30.0)
    args.rounds = args.rounds or (1 if args.quick else 3)

    if args.child:
        print(json.dumps(child(args.child, episodes, args.steps, warmup, max_seconds)))
        return 0

    names = list(args.only or FRAMEWORKS)
    if "tao" not in names:
        names.insert(0, "tao")
    with_peers = [n for n in names if n in PEERS]
    if args.no_peers:
        names = [n for n in names if n not in PEERS]
    elif with_peers:
        if args.quick and not peers_python().exists():
            print("peers' venv missing: --quick measures tao only", file=sys.stderr)
            names = [n for n in names if n not in PEERS]
        else:
            ensure_peers_venv()

    # Rounds interleave the frameworks, so that a burst of load from elsewhere on the
    # machine lands on all of them rather than on whichever was running at the time.
    rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    per_round = max(1, episodes // args.rounds)
    for round_no in range(1, args.rounds + 1):
        for name in names:
            if round_no > 1 and not rounds[name]:
                continue  # failed in the first round
            python = peers_python() if name in PEERS else Path(sys.executable)
            print(f"round {round_no}/{args.rounds}: {LABELS[name]} ...", file=sys.stderr)
            try:
                rounds[name].append(
                    run_child(
                        name, python, per_round, args.steps, warmup, max_seconds / args.rounds
                    )
                )
            except RuntimeError as error:
                print(f"  skipped: {error}", file=sys.stderr)
    results = {name: merge(runs) for name, runs in rounds.items() if runs}
    print(f"\nPer-step framework overhead, {args.steps} model calls per episode")
    print(table(results))
    flat = summarize(results)
    if "tao" in results:
        print("measuring import tao ...", file=sys.stderr)
        imports = import_times(Path(sys.executable), 1 if args.quick else 15)
        flat.update(imports)
        flat["goal_import_150ms"] = imports["import_tao_s"] <= 0.150
        print(
            "\n| import (fresh interpreter, median, start-up subtracted) | wall s "
            "| -X importtime s |"
        )
        print("|---|---:|---:|")
        for key, code in IMPORT_STATEMENTS.items():
            print(
                f"| `{code}` | {imports[key + '_s']:.3f} | {imports[key + '_importtime_s']:.3f} |"
            )
        print(f"| (bare interpreter start-up) | {imports['python_startup_s']:.3f} | |")
    if any(n in PEERS for n in results):
        flat["peer_versions"] = peer_versions()
    if args.out:
        full = {"summary": flat, "frameworks": results, "rounds": rounds, "argv": sys.argv[1:]}
        args.out.write_text(json.dumps(full, indent=2) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(flat))
    return 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
