"""The live display of ``tao run`` at a real terminal (issue 15): tokens as they stream,
a status line that moves while the model thinks, a clean screen at the end, and nothing
of it in piped output (SPEC M1: the plain output stays the plain output)."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.http import FakeServer, Reply, Request, chat_completion, streamed_chat
from tests.fakes.terminal import ANSI, Terminal, terminal_env

from tao.cli.live import clock

TASK = "What is 17 * 23 + 4?"
#: The first reply, streamed piece by piece; the stream holds before the last piece.
THOUGHT = ["Thought: I multiply", " seventeen by twenty-three", " and add four."]
ACTION = "\nAction: calculator[17 * 23 + 4]"
FINISH = "Thought: done.\nAction: finish[395]"
#: ``step 2 · 14.2s · 1,873 tokens · writing``; past a minute the clock reads ``4m 06s``.
STATUS = re.compile(r"step (\d+) · (\d+\.\ds|\d+m \d\ds) · ([\d,]+) tokens · (.+)")


def seconds(clock: str) -> float:
    minutes, _, rest = clock.rpartition("m ")
    return 60 * int(minutes or 0) + float(rest.rstrip("s"))


def test_the_clock_reads_seconds_then_minutes() -> None:
    assert [clock(s) for s in (0.04, 14.25, 59.9, 60.0, 336.5)] == [
        "0.0s", "14.2s", "59.9s", "1m 00s", "5m 36s"
    ]  # fmt: skip
    assert seconds(clock(336.5)) == 336 and seconds(clock(14.25)) == 14.2


@dataclass
class SlowModel:
    """A chat-completions server whose first reply holds mid-stream until ``release``."""

    base_url: str = ""
    release: threading.Event = field(default_factory=threading.Event)
    requests: list[Any] = field(default_factory=list)

    def answer(self, request: Request) -> Reply:
        self.requests.append(request.body)
        if not request.body.get("stream"):  # --json streams nothing
            text = "".join(THOUGHT) + ACTION if len(self.requests) == 1 else FINISH
            return Reply.json(chat_completion(text, request.body))
        if len(self.requests) == 1:
            events = streamed_chat([*THOUGHT, ACTION], request.body)
            action = 1 + len(THOUGHT)  # after the role's event and the thought's pieces

            def hold(index: int) -> None:
                if index == action:
                    self.release.wait(30)

            return dataclasses.replace(Reply.sse(events), before_chunk=hold)
        return Reply.sse(streamed_chat([FINISH], request.body))


@pytest.fixture
def slow_model() -> Iterator[SlowModel]:
    model = SlowModel()
    with FakeServer(model.answer, prefix="/v1") as server:
        model.base_url = server.base_url
        yield model
        model.release.set()


def _command(slow_model: SlowModel) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tao",
        "run",
        TASK,
        "--model",
        "openai:test-model",
        "--base-url",
        slow_model.base_url,
        "--tools",
        "calc",
        "--protocol",
        "text",
    ]


def _env(tao_home: Path) -> dict[str, str]:
    return terminal_env({**os.environ, "TAO_HOME": str(tao_home), "OPENAI_API_KEY": "sk-test"})


def test_tokens_stream_and_the_status_line_moves_before_the_reply_completes(
    slow_model: SlowModel, tao_home: Path
) -> None:
    with Terminal(_command(slow_model), env=_env(tao_home)) as term:
        screen = term.wait_for(lambda s: "twenty-three and add four." in s and "writing" in s)
        # The reply is not complete (the server holds its action): no step shown yet.
        assert "Action:" not in screen and "Observation" not in screen
        first = STATUS.search(screen)
        assert first is not None, screen
        assert first.group(1) == "1" and first.group(4).strip() == "writing"
        assert int(first.group(3).replace(",", "")) >= len(THOUGHT)  # streamed chunks
        # Nothing arrives, yet the elapsed time moves: the display is alive.
        later = term.wait_for(
            lambda s: (
                (m := STATUS.search(s)) is not None
                and seconds(m.group(2)) >= seconds(first.group(2)) + 0.3
            )
        )
        assert "twenty-three and add four." in later

        slow_model.release.set()
        assert term.finish() == 0
        final = term.screen_text()
    # The final screen: the steps and the answer; no status line or stream left over.
    assert STATUS.search(final) is None, final
    assert final.count("I multiply seventeen by twenty-three and add four.") == 1, final
    assert "Action: calculator(expression='17 * 23 + 4')" in final  # the bound call (issue 30)
    assert "finished" in final and "395" in final
    assert final.index("#1") < final.index("#2") < final.index("finished")


def test_piped_stdout_gets_no_live_display_while_the_terminal_shows_it(
    slow_model: SlowModel, tao_home: Path
) -> None:
    """``tao run … | tee log``: the status line goes to stderr (the terminal), and stdout
    gets exactly the plain output, with no control sequence in it."""
    slow_model.release.set()
    reader, writer = os.pipe()
    with Terminal(_command(slow_model), env=_env(tao_home), stdout=writer) as term:
        os.close(writer)
        with os.fdopen(reader, "rb") as piped:
            out = threading.Thread(target=lambda: setattr(term, "piped", piped.read()))
            out.start()
            assert term.finish() == 0
            out.join(30)
        stdout = term.piped.decode()  # type: ignore[attr-defined]
        shown = term.plain()
    assert "\x1b" not in stdout and "\r" not in stdout
    assert STATUS.search(stdout) is None and "loading model" not in stdout
    assert "Thought: I multiply seventeen by twenty-three and add four." in stdout
    assert "finished" in stdout and "395" in stdout
    assert STATUS.search(shown) is not None  # the status line was on the terminal (stderr)
    assert "Observation" not in shown  # and the steps were not


def test_json_output_is_unchanged_at_a_terminal(slow_model: SlowModel, tao_home: Path) -> None:
    slow_model.release.set()
    with Terminal([*_command(slow_model), "--json"], env=_env(tao_home)) as term:
        assert term.finish() == 0
        written = term.plain()
    assert STATUS.search(written) is None and "loading model" not in written
    assert '"status": "finished"' in written


def test_no_terminal_at_all_prints_what_it_always_printed(
    slow_model: SlowModel, tao_home: Path
) -> None:
    slow_model.release.set()
    proc = subprocess.run(
        _command(slow_model),
        env={**_env(tao_home)},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    assert ANSI.search(proc.stdout) is None and ANSI.search(proc.stderr) is None
    assert STATUS.search(proc.stdout + proc.stderr) is None
    assert proc.stdout.startswith(f"tao openai:test-model  {TASK}\n")


def _write_notes(replay: Any) -> Path:
    return Path(
        replay(
            [
                'Thought: write it.\nAction: write_file(path="notes.txt", content="hello\\n")',
                "Thought: done.\nAction: finish[written]",
            ]
        )
    )


def _answer_the_prompt(term: Terminal) -> str:
    """Wait for the approval prompt; the status line must be gone and stay gone while the
    person reads it (it is redrawn 8 times a second when shown)."""
    prompt = term.wait_for(lambda s: "y/N" in s)
    deadline = time.monotonic() + 0.6
    while time.monotonic() < deadline:
        term.read(0.05)
    assert STATUS.search(term.screen_text()) is None, term.screen_text()
    assert term.screen_text().rstrip().endswith(prompt.rstrip().splitlines()[-1].rstrip())
    os.write(term.master, b"y\n")
    return prompt


def test_an_approval_prompt_is_not_drawn_over_S3(
    replay: Any, tao_home: Path, tmp_path: Path
) -> None:
    args = [
        sys.executable,
        "-m",
        "tao",
        "run",
        "write notes",
        "--model",
        f"replay:{_write_notes(replay)}",
        "--tools",
        "write",
        "--project",
        str(tmp_path),
    ]
    with Terminal(args, env=_env(tao_home)) as term:
        prompt = _answer_the_prompt(term)
        assert "write_file" in prompt and "+hello" in prompt
        assert term.finish() == 0
        final = term.screen_text()
    assert (tmp_path / "notes.txt").read_text() == "hello\n"
    assert STATUS.search(final) is None and "finished" in final


def test_the_person_doing_the_tools_types_without_the_status_line_in_the_way_M2(
    replay: Any, tao_home: Path
) -> None:
    script = replay(["Thought: ask\nAction: calculator[2 + 2]", "Action: finish[five]"])
    args = [sys.executable, "-m", "tao", "run", "2+2?", "--model", f"replay:{script}",
            "--tools", "calc", "--human-tools"]  # fmt: skip
    with Terminal(args, env=_env(tao_home)) as term:
        asked = term.wait_for(lambda s: "type the Observation" in s)
        assert "calculator(expression='2 + 2')" in asked
        deadline = time.monotonic() + 0.6
        while time.monotonic() < deadline:
            term.read(0.05)
        assert STATUS.search(term.screen_text()) is None, term.screen_text()
        os.write(term.master, b"5 (I counted on my fingers)\n")
        assert term.finish() == 0
        final = term.screen_text()
    assert "5 (I counted on my fingers)" in final and "finished" in final
    assert STATUS.search(final) is None


def test_resume_shows_the_live_display_from_the_next_step_M3(
    replay: Any, tao_home: Path, tmp_path: Path, tao_cli: Any
) -> None:
    paused = tao_cli(
        "run",
        "write notes",
        "--model",
        f"replay:{_write_notes(replay)}",
        "--tools",
        "write",
        "--project",
        str(tmp_path),
        "--no-input",
        "--json",
    )
    assert paused.returncode == 4, paused.stderr
    run_id = paused.json()["run_id"]
    args = [sys.executable, "-m", "tao", "resume", run_id]
    with Terminal(args, env=_env(tao_home)) as term:
        _answer_the_prompt(term)
        assert term.finish() == 0
        transcript, final = term.plain(), term.screen_text()
    assert re.search(r"step 1 · [\d.]+s · [\d,]+ tokens · ", transcript), transcript
    assert STATUS.search(final) is None and "finished" in final and "written" in final
