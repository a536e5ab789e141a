"""Where questions run: a local thread pool, or a Ray cluster (``--executor ray``).

Both yield :class:`Outcome` objects as questions finish, in any order; the
caller orders the results by question index, so the numbers do not depend on
the executor or on the concurrency. Locally, every run is recorded into the
run log as it happens; Ray workers return their runs and the driver records
them, so the traces always land in the driver's ``$TAO_HOME``.

    for outcome in local_outcomes(answer_question, config, questions, store, concurrency=4): ...
    for outcome in ray_outcomes(answer_question, config, questions, address=None): ...

The caller hands down how one question is answered (``answer_question`` builds agents),
so where questions run does not depend on how they are answered.

Ray is an optional extra (``pip install 'tao[eval-ray]'``); a cluster's nodes need
tao installed and the corpus and prompt files at the same paths.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from tao.errors import FatalError
from tao.eval.config import EvalConfig
from tao.eval.data import Question
from tao.eval.prompts import PromptSet, load_prompts
from tao.models import Model, load_model
from tao.state.result import RunObserver

if TYPE_CHECKING:
    from tao.eval.strategies import Outcome
    from tao.store import Store

#: Environment a remote cluster's workers need to reach the same model as the driver.
FORWARDED_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
)


#: Answers and scores one question, with the observers of its runs: in practice
#: :func:`tao.eval.strategies.answer_question`.
Answerer = Callable[
    [EvalConfig, Model, PromptSet, Question, "Store | None", Sequence[RunObserver]], "Outcome"
]


class ExecutorError(FatalError):
    """The executor could not start (e.g. Ray is not installed or the cluster is unreachable)."""


def local_outcomes(
    answer: Answerer,
    config: EvalConfig,
    questions: Sequence[Question],
    store: Store | None,
    *,
    concurrency: int = 1,
    model: Model | None = None,
    observers: Sequence[RunObserver] = (),
) -> Iterator[Outcome]:
    """Answer ``questions`` on ``concurrency`` threads sharing one model; yield as they finish.

    At most ``concurrency`` questions are in flight; closing the iterator (Ctrl-C)
    cancels the questions not yet started. ``observers`` watch every agent run, on the
    worker threads (the CLI's progress shows each question's step).
    """
    model = model or load_model(config.model, base_url=config.run.base_url)
    prompts = load_prompts(Path(config.prompts), config.benchmark)
    pool = ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="tao-eval")
    waiting = list(reversed(questions))
    running: set[Future[Outcome]] = set()
    try:
        while waiting or running:
            while waiting and len(running) < max(1, concurrency):
                question = waiting.pop()
                running.add(pool.submit(answer, config, model, prompts, question, store, observers))
            done, running = wait(running, return_when=FIRST_COMPLETED)
            for future in sorted(done, key=lambda f: f.result().record.index):
                yield future.result()
    finally:
        pool.shutdown(wait=not running, cancel_futures=True)


_worker_models: dict[tuple[str, str | None], Model] = {}
_worker_prompts: dict[tuple[str, str], PromptSet] = {}
_worker_lock = threading.Lock()


def _answer_remote(answer: Answerer, config: EvalConfig, question: Question) -> Outcome:
    """Runs inside a Ray worker: one model and prompt set per worker process, no run log."""
    with _worker_lock:
        key = (config.model, config.run.base_url)
        if key not in _worker_models:
            _worker_models[key] = load_model(config.model, base_url=config.run.base_url)
        prompt_key = (config.prompts, config.benchmark)
        if prompt_key not in _worker_prompts:
            _worker_prompts[prompt_key] = load_prompts(Path(config.prompts), config.benchmark)
        model, prompts = _worker_models[key], _worker_prompts[prompt_key]
    return answer(config, model, prompts, question, None, ())


def ray_outcomes(
    answer: Answerer,
    config: EvalConfig,
    questions: Sequence[Question],
    *,
    address: str | None = None,
    concurrency: int = 1,
) -> Iterator[Outcome]:
    """Answer ``questions`` as Ray tasks, ``concurrency`` in flight; yield as they finish.

    ``address`` connects to a running cluster (``ray://host:10001`` or ``auto``), whose
    workers get the driver's API keys (``FORWARDED_ENV``) through Ray's runtime env;
    without it a local Ray instance is started on 127.0.0.1 and stopped after the eval.
    """
    try:
        import ray
    except ImportError:
        raise ExecutorError(
            "the ray executor needs Ray: pip install 'tao[eval-ray]' (or pip install ray)"
        ) from None
    init_args = _ray_init_args(address, concurrency)
    started = not ray.is_initialized()
    try:
        ray.init(**init_args)
    except Exception as error:  # ConnectionError, RuntimeError, ValueError, ...
        where = address or "a local instance"
        raise ExecutorError(f"cannot start Ray ({where}): {error}") from error
    task = ray.remote(num_cpus=1, max_retries=2)(_answer_remote)
    waiting = list(reversed(questions))
    running: list[object] = []
    try:
        while waiting or running:
            while waiting and len(running) < max(1, concurrency):
                running.append(task.remote(answer, config, waiting.pop()))
            done, running = ray.wait(running, num_returns=1)
            for ref in done:
                outcome: Outcome = ray.get(ref)
                yield outcome
    finally:
        for ref in running:
            ray.cancel(ref, force=True)
        if started:
            ray.shutdown()


class _RayInit(TypedDict, total=False):
    """The ``ray.init`` keywords an eval sets."""

    include_dashboard: bool
    log_to_driver: bool
    ignore_reinit_error: bool
    address: str
    runtime_env: dict[str, dict[str, str]]
    num_cpus: int
    _node_ip_address: str


def _ray_init_args(address: str | None, concurrency: int) -> _RayInit:
    """``ray.init`` keywords: a remote cluster gets the driver's model credentials."""
    init_args: _RayInit = {
        "include_dashboard": False,
        "log_to_driver": False,
        "ignore_reinit_error": True,
    }
    if address:
        init_args["address"] = address
        forwarded = {name: os.environ[name] for name in FORWARDED_ENV if os.environ.get(name)}
        if forwarded:
            init_args["runtime_env"] = {"env_vars": forwarded}
    else:  # a local instance for this eval, on the loopback interface only
        init_args["num_cpus"] = max(1, concurrency)
        init_args["_node_ip_address"] = "127.0.0.1"
    return init_args
