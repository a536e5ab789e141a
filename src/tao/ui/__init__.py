"""``tao ui``: a local web page for the run log and its pending approvals (SPEC M3, S3, S9).

    from tao.store import open_store
    from tao.ui import UiServer

    server = UiServer(open_store(), port=8765)    # 127.0.0.1 only
    print(server.url)
    server.serve_forever()

:mod:`tao.ui.server` guards and serves (Starlette on uvicorn), :mod:`tao.ui.app` routes,
:mod:`tao.ui.live` streams changes as server-sent events, :mod:`tao.ui.pages` renders
(and escapes) HTML, :mod:`tao.ui.approval` records decisions and resumes runs,
:mod:`tao.ui.assets` holds the stylesheet and the live-update script.
"""

from __future__ import annotations

from tao.ui.server import UiServer

__all__ = ["UiServer"]
