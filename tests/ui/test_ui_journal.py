"""The web page's approval card for a call cut short by a crash (SPEC R1, S3, S7)."""

from __future__ import annotations

import html
import time
from typing import Any

from tao.models.base import ModelReply
from tao.state.config import Checkpoint, PendingCall, RunConfig
from tao.state.result import RunResult, Status
from tao.store.factory import open_store


def test_an_interrupted_call_is_marked_as_possibly_done_on_the_page_R1(ui: Any) -> None:
    call = PendingCall(
        step=1, position=0, tool="write_file", arguments={"path": "a.txt", "content": "x"},
        effects=("writes",), interrupted=True,
    )  # fmt: skip
    result = RunResult(run_id="cut-short", task="write a", model="replay:x", started_at=time.time())
    config = RunConfig(model="replay:x", tools=("write",))
    with open_store() as store:
        store.begin_run(result, config)
        reply = ModelReply(text='Action: write_file(path="a.txt", content="x")')
        store.save_state(result.run_id, Checkpoint(step=1, reply=reply, pending=(call,)))
        result.status, result.pending = Status.AWAITING_APPROVAL, [call]
        store.finish_run(result, config)
    warning = html.escape(call.warning or "", quote=True)
    page = ui.request("/runs/cut-short").text
    assert f'<p class="interrupted">{warning}</p>' in page
    assert f'name="call" value="{call.id}"' in page  # Approve names this exact call (S7)
    assert f'<p class="interrupted">{warning}</p>' in ui.request("/").text
    ordinary = PendingCall(step=1, position=0, tool="write_file", arguments={})
    assert ordinary.warning is None
