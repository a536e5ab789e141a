"""``tao serve --queue NAME``: submit agent runs to a queue of workers over HTTP (issue 28).

    POST /v1/runs        {"task": "...", "config": {RunConfig fields}}  -> 202 {"id", "status"}
    GET  /v1/runs/ID     -> the run's summary (status, answer, who holds it, ...)

The server runs nothing itself: a run goes to the queue (``tao worker`` takes it), so any
number of ``tao serve`` replicas over one PostgreSQL run log (``TAO_DATABASE_URL``) answer
the same. The body is checked before anything is recorded: a wrong field or value is a 400
naming it.
"""

from __future__ import annotations

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tao.errors import StateError, TaoError, UnknownRunError
from tao.server.jsonbody import BadBody, decode_json
from tao.server.wire import ApiError
from tao.state.config import RunConfig
from tao.state.setting import settings_of, unrecorded
from tao.store.factory import open_store
from tao.tools.registry import set_names
from tao.workers.queue import submit_run

#: The longest task taken (a run's task is one request; a book is not).
MAX_TASK_CHARS = 100_000


class RunsApi:
    """The two routes, submitting to ``queue``."""

    def __init__(self, queue: str) -> None:
        self.queue = queue

    async def submit(self, request: Request) -> Response:
        try:
            body = decode_json(await request.body())
        except BadBody as error:
            raise ApiError(400, str(error)) from None
        task, config = _read(body)
        run_id = await anyio.to_thread.run_sync(self._submit, task, config)
        return JSONResponse({"id": run_id, "status": "queued", "queue": self.queue}, 202)

    def _submit(self, task: str, config: RunConfig) -> str:
        with open_store() as store:
            return submit_run(store, task, config.model or "", config, self.queue)

    async def show(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]

        def read() -> Response:
            with open_store() as store:
                try:
                    summary = store.get_summary(run_id)
                except UnknownRunError as error:
                    raise ApiError(404, str(error), code="run_not_found") from None
            return JSONResponse(summary.to_json())

        return await anyio.to_thread.run_sync(read)


def _read(body: object) -> tuple[str, RunConfig]:
    """The task and settings of a submission; :class:`ApiError` 400 naming what is wrong."""
    if not isinstance(body, dict):
        raise ApiError(400, 'send a JSON object: {"task": ..., "config": {...}}')
    unknown = sorted(set(body) - {"task", "config"})
    if unknown:
        raise ApiError(400, f"unknown field(s): {', '.join(unknown)}")
    task, config = body.get("task"), body.get("config", {})
    if not isinstance(task, str) or not task.strip():
        raise ApiError(400, "task: give the task as a non-empty string")
    if len(task) > MAX_TASK_CHARS:
        raise ApiError(400, f"task: at most {MAX_TASK_CHARS:,} characters")
    if not isinstance(config, dict):
        raise ApiError(400, "config: give the run's settings as an object (RunConfig fields)")
    unknown = sorted(set(config) - _SETTINGS)
    if unknown:  # the run log's reader skips them (a newer tao's); a submission is refused
        raise ApiError(
            400, f"config: unknown setting(s) {', '.join(unknown)}; settings: {_SETTING_LIST}"
        )
    try:
        parsed = RunConfig.from_json(config)
        for spec in parsed.tools:  # a worker would fail on it later, with the run queued
            if spec is not None:
                set_names(spec)
    except (StateError, TaoError, ValueError, TypeError) as error:
        raise ApiError(400, f"config: {error}") from None
    return task, parsed


#: The settings a submission may give: those a run records (RunConfig's fields).
_SETTINGS = frozenset(
    f.name for f, _ in settings_of(RunConfig) if f.name not in unrecorded(RunConfig)
)
_SETTING_LIST = ", ".join(sorted(_SETTINGS))
