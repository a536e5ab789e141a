"""The run list of ``tao ui``: search, status and model filters, pages (SPEC M3).

    GET /?q=readme&status=finished&model=local&page=2

The filters are a plain ``GET`` form and the pages plain links, so the address
of a filtered page can be shared and reloaded, and no script is needed; the
run log filters, counts and pages (:meth:`tao.store.Store.find_runs`). A page
asks for one of :data:`tao.store.STATUSES`, a model, a search text of at most
:data:`tao.store.query.MAX_TEXT` characters and a page number; anything else is
a clear 400, never a traceback. Every value shown is escaped (S9).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from tao.errors import StoreError
from tao.format import format_seconds, format_time, status_word
from tao.store.query import STATUSES, RunPage, RunQuery, RunSummary
from tao.ui import pages
from tao.ui.pages import badge, e, run_url

if TYPE_CHECKING:  # rendered here, read by tao.ui.approval
    from tao.ui.approval import Pending

#: Runs per page.
PAGE_SIZE = 25
_MAX_PAGE = 100_000


@dataclass(frozen=True, slots=True)
class Filters:
    """What the run list shows: ``/``'s query string (``q``, ``status``, ``model``, ``page``)."""

    text: str = ""
    status: str = ""
    model: str = ""
    page: int = 1

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> Filters:
        """Read a query string; a bad value is a :class:`StoreError` saying what to send."""
        raw_page = params.get("page", "").strip() or "1"
        if not raw_page.isdigit() or not 1 <= int(raw_page) <= _MAX_PAGE:
            raise StoreError(f"page must be a number from 1 to {_MAX_PAGE}, not {raw_page!r}")
        found = cls(params.get("q", "").strip(), params.get("status", "").strip(),
                    params.get("model", "").strip(), int(raw_page))  # fmt: skip
        found.query()  # an unknown status or an overlong text is refused here
        return found

    def query(self) -> RunQuery:
        return RunQuery(text=self.text or None, status=self.status or None,
                        model=self.model or None, limit=PAGE_SIZE,
                        offset=(self.page - 1) * PAGE_SIZE)  # fmt: skip

    @property
    def active(self) -> bool:
        return bool(self.text or self.status or self.model)

    def href(self, **changes: int) -> str:
        """This list's address (``/?q=…&page=2``), with some fields changed."""
        wanted = replace(self, **changes)  # type: ignore[arg-type]
        fields = {"q": wanted.text, "status": wanted.status, "model": wanted.model}
        if wanted.page > 1:
            fields["page"] = str(wanted.page)
        query = urlencode({k: v for k, v in fields.items() if v})
        return f"/?{query}" if query else "/"


def index_body(
    listing: RunPage,
    filters: Filters,
    *,
    models: list[str],
    prefixes: dict[str, str],
    pending: list[Pending],
    csrf: str,
) -> str:
    """Pending approvals first (they block a run), then the filter form and one page of runs."""
    parts = []
    if pending:
        parts.append(f'<section class="approvals"><h2>Waiting for you ({len(pending)})</h2>')
        parts.extend(pages.approval_card(item, csrf=csrf, link=True) for item in pending)
        parts.append("</section>")
    parts.append("<section><h2>Runs</h2>")
    parts.append(_filter_form(filters, models))
    if not listing.runs:
        parts.append(_empty(listing, filters))
    else:
        parts.append(_table(listing.runs, prefixes))
        parts.append(_pager(listing, filters))
    parts.append("</section>")
    return "\n".join(parts)


def _empty(listing: RunPage, filters: Filters) -> str:
    if filters.active or listing.total:
        return f'<p class="empty">No runs match. <a href="{e(filters.href(page=1))}">First page</a> · <a href="/">Show all runs</a></p>'  # noqa: E501
    return '<p class="empty">No runs yet. Start one with <code>tao run "…"</code>.</p>'


def _options(values: list[tuple[str, str]], chosen: str) -> str:
    return "".join(
        f'<option value="{e(value)}"{" selected" if value == chosen else ""}>{e(label)}</option>'
        for value, label in values
    )


def _filter_form(filters: Filters, models: list[str]) -> str:
    statuses = [("", "All statuses"), *((s, status_word(s)) for s in STATUSES)]
    known = models if not filters.model or filters.model in models else [*models, filters.model]
    choices = [("", "All models"), *((m, m) for m in known)]
    clear = '<a class="clear" href="/">Clear</a>' if filters.active else ""
    return (
        '<form class="filters" method="get" action="/" role="search">'
        f'<input type="search" name="q" value="{e(filters.text)}" maxlength="200" '
        'placeholder="Search tasks" aria-label="Search tasks">'
        f'<select name="status" aria-label="Status">{_options(statuses, filters.status)}</select>'
        f'<select name="model" aria-label="Model">{_options(choices, filters.model)}</select>'
        f'<button type="submit" class="search">Search</button>{clear}</form>'
    )


_COLUMNS = (
    ("id", "ID", ""), ("when", "Started", ""), ("status", "Status", ""),
    ("steps", "Steps", "num"), ("tokens", "Tokens", "num"), ("duration", "Duration", "num"),
    ("cost", "Cost", "num"), ("model", "Model", ""), ("task", "Task", ""),
)  # fmt: skip


def _table(summaries: list[RunSummary], prefixes: dict[str, str]) -> str:
    cols = "".join(f'<col class="c-{name}">' for name, _, _ in _COLUMNS)
    heads = "".join(f'<th class="c-{name} {kind}">{title}</th>' for name, title, kind in _COLUMNS)
    rows = "".join(_row(s, prefixes.get(s.run_id, s.run_id)) for s in summaries)
    return (
        f'<div class="table-wrap"><table class="runs"><colgroup>{cols}</colgroup>'
        f"<thead><tr>{heads}</tr></thead><tbody>{rows}</tbody></table></div>"
    )


def _row(summary: RunSummary, prefix: str) -> str:
    link = e(run_url(summary.run_id))
    tag = summary.config.eval_tag if summary.config is not None else None
    eval_line = (
        f'<span class="tag eval-tag" title="{e(pages.eval_words(tag))}">{e(tag.benchmark)} · '
        f"{e(tag.question_id)} · gold: {e(tag.gold)}</span>"
        if tag is not None
        else ""
    )
    return (
        f'<tr data-run="{e(summary.run_id)}">'
        f'<td class="c-id" title="{e(summary.run_id)}">'
        f'<a class="id" href="{link}">{e(prefix)}</a></td>'
        f'<td class="c-when">{e(format_time(summary.started_at, seconds=False))}</td>'
        f'<td class="c-status">{badge(summary.status)}</td>'
        f'<td class="c-steps num">{summary.steps}</td>'
        f'<td class="c-tokens num">{summary.tokens:,}</td>'
        f'<td class="c-duration num">{e(format_seconds(summary.duration_s))}</td>'
        f'<td class="c-cost num">{e(pages.cost_text(summary))}</td>'
        f'<td class="c-model" title="{e(summary.model)}">{e(summary.model)}</td>'
        f'<td class="c-task" title="{e(summary.task)}"><a href="{link}">{e(summary.task)}</a>'
        f"{eval_line}</td></tr>"
    )


def _pager(listing: RunPage, filters: Filters) -> str:
    pages_in_all = max(1, -(-listing.total // PAGE_SIZE))
    newer = (
        f'<a rel="prev" href="{e(filters.href(page=filters.page - 1))}">← Newer</a>'
        if filters.page > 1
        else '<span class="off">← Newer</span>'
    )
    older = (
        f'<a rel="next" href="{e(filters.href(page=filters.page + 1))}">Older →</a>'
        if filters.page < pages_in_all
        else '<span class="off">Older →</span>'
    )
    count = f"{listing.total:,} run{'' if listing.total == 1 else 's'}"
    where = f"Page {filters.page} of {pages_in_all} · {count}"
    return f'<nav class="pager" aria-label="Pages">{newer}<span class="where">{where}</span>{older}</nav>'  # noqa: E501
