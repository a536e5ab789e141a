"""``tao eval fetch``: download the full benchmark data once, verify it, cache it.

The sources are the official files: the HotpotQA dev set (distractor setting, whose
context paragraphs become the local wiki), FEVER's ``paper_dev.jsonl``, and the ReAct
paper's prompts from its repository. Each file is streamed to ``NAME.part`` in the cache's
``downloads/`` folder, verified, then renamed, so an interrupted or corrupt download never
sits where a good one is expected. The data folder (:mod:`tao.eval.sources` layout) is then
built beside the old one and swapped in with its ``manifest.json`` written last.

How a file is verified:

- the prompts: their sha256, pinned here. They are the files of ysymyth/ReAct
  (``prompts/prompts_naive.json``, ``prompts/fever.json``), byte-identical to the copies
  shipped in ``tao/eval/sample/react_prompts``, whose digests these are;
- HotpotQA and FEVER: no digest is pinned, because the official files could not be
  fetched where this code was written, and a guessed digest would reject the real file
  (or, worse, be copied from somewhere unverified). They are checked by size (a cap) and
  by structure instead: HotpotQA dev is a JSON array of exactly 7,405 questions, each with
  ``_id``, ``question``, ``answer`` and ``context``; FEVER paper_dev is 9,999 JSON lines,
  each with ``id``, ``claim`` and ``label``. ``manifest.json`` records the sha256 of what
  was accepted, so two machines can compare.

``$TAO_DATA_MIRROR`` (an ``http(s)://`` base URL) fetches every file as ``BASE/NAME``
instead: for a mirror inside a network without internet, and for the tests, which serve
fixture files from 127.0.0.1.

    fetch_all(console)     # -> the cache folder, complete
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from tao.errors import FatalError, InternalError
from tao.eval.sources import (
    CORPUS_FILE,
    MANIFEST,
    PROMPTS_DIR,
    QUESTIONS_FILES,
    cache_dir,
    cache_root,
    sample_dir,
)
from tao.state.jsontypes import JSON, JSONObject

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

#: A base URL that replaces every official one (``BASE/NAME``): a mirror, or a test server.
MIRROR_ENV = "TAO_DATA_MIRROR"

HOTPOT_DEV_COUNT = 7405
FEVER_PAPER_DEV_COUNT = 9999
_CHUNK = 1 << 16
_TIMEOUT_S = 30.0


class FetchError(FatalError):
    """A download that failed: unreachable, cut off, too big, or not the expected file.

    Nothing is cached when it is raised; the sample (or an earlier download) stays in use.
    """


@dataclass(frozen=True)
class Remote:
    """One file to download, and how to know it is the right one."""

    name: str
    url: str
    max_bytes: int
    sha256: str | None = None
    """Pinned digest, where the official file's is known; otherwise :attr:`check` runs."""
    check: Callable[[Path], None] | None = None
    """Structure check for files without a pinned digest; raises :class:`FetchError`."""

    def source_url(self) -> str:
        mirror = os.environ.get(MIRROR_ENV, "").strip()
        if not mirror:
            return self.url
        if urlsplit(mirror).scheme not in ("http", "https"):
            raise FetchError(f"${MIRROR_ENV} must be an http:// or https:// URL, not {mirror!r}")
        return f"{mirror.rstrip('/')}/{self.name}"


def _load_json(path: Path) -> JSON:
    try:
        value: JSON = json.loads(path.read_bytes())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise FetchError(f"{path.name} is not valid JSON ({error})") from None
    return value


def _check_hotpot(path: Path) -> None:
    data = _load_json(path)
    if not isinstance(data, list) or len(data) != HOTPOT_DEV_COUNT:
        count = len(data) if isinstance(data, list) else "no"
        raise FetchError(
            f"{path.name}: expected a JSON array of {HOTPOT_DEV_COUNT} questions, got {count}"
        )
    for index, item in enumerate(data):
        if not isinstance(item, dict) or not all(
            k in item for k in ("_id", "question", "answer", "context")
        ):
            raise FetchError(f"{path.name}: item {index} lacks _id, question, answer or context")


def _check_fever(path: Path) -> None:
    lines = path.read_bytes().splitlines()
    rows = [line for line in lines if line.strip()]
    if len(rows) != FEVER_PAPER_DEV_COUNT:
        raise FetchError(
            f"{path.name}: expected {FEVER_PAPER_DEV_COUNT} JSON lines, got {len(rows)}"
        )
    for number, line in enumerate(rows, start=1):
        try:
            row = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise FetchError(f"{path.name}:{number}: not valid JSON") from None
        if not isinstance(row, dict) or not all(k in row for k in ("id", "claim", "label")):
            raise FetchError(f"{path.name}:{number}: lacks id, claim or label")


_REACT_RAW = "https://raw.githubusercontent.com/ysymyth/ReAct/master/prompts"
REMOTES = (
    Remote(
        "hotpot_dev_distractor_v1.json",
        "http://curtis.ml.cmu.edu/datasets/hotpot/hotpot_dev_distractor_v1.json",
        max_bytes=120_000_000,
        check=_check_hotpot,
    ),
    Remote(
        "paper_dev.jsonl",
        "https://fever.ai/download/fever/paper_dev.jsonl",
        max_bytes=40_000_000,
        check=_check_fever,
    ),
    Remote(
        "prompts_naive.json",
        f"{_REACT_RAW}/prompts_naive.json",
        max_bytes=1_000_000,
        sha256="f35e8c17bbd620b90857712484c51005f5440641a37cff0b042b82ac7f3d71b5",
    ),
    Remote(
        "fever.json",
        f"{_REACT_RAW}/fever.json",
        max_bytes=1_000_000,
        sha256="bfd7793d8766e020a817c8a56b2228f230298fb161f9fa87fa543b4b38d46c03",
    ),
)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for chunk in iter(lambda: file.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify(remote: Remote, path: Path) -> None:
    """Raise :class:`FetchError` unless ``path`` is ``remote``'s file."""
    if remote.sha256 is not None:
        actual = sha256_of(path)
        if actual != remote.sha256:
            raise FetchError(
                f"{remote.name}: checksum mismatch (sha256 {actual}, expected "
                f"{remote.sha256}); the file was not kept"
            )
    if remote.check is not None:
        remote.check(path)


def _host(url: str) -> str:
    parts = urlsplit(url)
    return parts.netloc or url


def download(remote: Remote, folder: Path, progress: Progress | None = None) -> Path:
    """``folder/NAME``, downloaded and verified; a file already there and valid is kept."""
    import httpx2

    target = folder / remote.name
    if target.is_file():
        try:
            verify(remote, target)
            return target
        except FetchError:
            target.unlink()
    folder.mkdir(parents=True, exist_ok=True)
    part = folder / f"{remote.name}.part"
    url = remote.source_url()
    task = progress.add_task(remote.name, total=None) if progress else None
    try:
        with httpx2.Client(timeout=_TIMEOUT_S, follow_redirects=True) as client:
            _stream(client, url, remote, part, progress, task)
        verify(remote, part)
    except httpx2.ConnectError as error:
        part.unlink(missing_ok=True)
        raise FetchError(_unreachable(url, error)) from None
    except httpx2.TimeoutException as error:
        part.unlink(missing_ok=True)
        raise FetchError(_unreachable(url, error or "timed out")) from None
    except httpx2.TransportError as error:
        part.unlink(missing_ok=True)
        raise FetchError(
            f"the download of {remote.name} from {_host(url)} broke off ({error}); "
            "nothing was kept: run tao eval fetch again"
        ) from None
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    os.replace(part, target)
    return target


def _unreachable(url: str, error: object) -> str:
    return (
        f"cannot reach {_host(url)}: {error}; the shipped sample is used until "
        "tao eval fetch succeeds (run it when online)"
    )


def _stream(
    client: object,
    url: str,
    remote: Remote,
    part: Path,
    progress: Progress | None,
    task: TaskID | None,
) -> None:
    """Write the body of ``url`` to ``part``, within ``remote.max_bytes``, complete."""
    import httpx2

    if not isinstance(client, httpx2.Client):
        raise InternalError(f"fetching needs an httpx2 client, not {type(client).__name__}")
    with client.stream("GET", url) as response:
        if response.status_code != 200:
            raise FetchError(
                f"{_host(url)} answered {response.status_code} for {remote.name} ({url})"
            )
        declared = response.headers.get("content-length")
        total = int(declared) if declared and declared.isdigit() else None
        if total is not None and total > remote.max_bytes:
            raise FetchError(
                f"{remote.name} from {_host(url)} is {total} bytes, over the "
                f"{remote.max_bytes}-byte limit for it"
            )
        if progress is not None and task is not None:
            progress.update(task, total=total)
        received = 0
        with part.open("wb") as file:
            for chunk in response.iter_bytes(_CHUNK):
                received += len(chunk)
                if received > remote.max_bytes:
                    raise FetchError(
                        f"{remote.name} from {_host(url)} goes on past the "
                        f"{remote.max_bytes}-byte limit for it"
                    )
                file.write(chunk)
                if progress is not None and task is not None:
                    progress.update(task, completed=received)
        if total is not None and received != total:
            raise FetchError(
                f"the download of {remote.name} from {_host(url)} broke off after "
                f"{received} of {total} bytes; nothing was kept: run tao eval fetch again"
            )


_FEVER_ESCAPES = (
    ("-LRB-", "("),
    ("-RRB-", ")"),
    ("-LSB-", "["),
    ("-RSB-", "]"),
    ("-COLON-", ":"),
    ("_", " "),
)


def _items(value: JSON) -> list[JSON]:
    """``value`` if it is a list, else nothing: downloaded JSON is read defensively."""
    return value if isinstance(value, list) else []


def fever_title(page: str) -> str:
    """FEVER's page ids as Wikipedia titles: ``The_Pelican_Brief_-LRB-film-RRB-`` →
    ``The Pelican Brief (film)``."""
    for escaped, plain in _FEVER_ESCAPES:
        page = page.replace(escaped, plain)
    return page


def _key(title: str) -> str:
    return " ".join(html.unescape(title).split()).casefold()


def _jsonl(rows: Iterator[JSONObject]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def build_hotpot(dev: Path, out: Path) -> tuple[int, dict[str, str]]:
    """Questions and the wiki from the distractor dev set; the wiki by title key."""
    data = _load_json(dev)
    if not isinstance(data, list):
        raise FetchError(f"{dev.name}: expected a JSON array of questions")
    pages: dict[str, JSONObject] = {}
    questions: list[JSONObject] = []
    for index, item in enumerate(data):
        if not isinstance(item, dict):
            raise FetchError(f"{dev.name}: question {index} is not a JSON object")
        context = item.get("context")
        titles: list[JSON] = []
        for entry in _items(context):
            if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)):
                continue
            sentences = [s for s in _items(entry[1]) if isinstance(s, str)]
            titles.append(entry[0])
            pages.setdefault(
                _key(entry[0]),
                {
                    "title": entry[0],
                    "text": "".join(sentences).strip(),
                    "sentences": list[JSON](sentences),
                },
            )
        support = [f[0] for f in _items(item.get("supporting_facts")) if isinstance(f, list) and f]
        questions.append(
            {
                "dev_index": index,
                "_id": item.get("_id"),
                "question": item.get("question"),
                "answer": item.get("answer"),
                "type": item.get("type"),
                "supporting_titles": list(dict.fromkeys(support)),
                "context_titles": titles,
            }
        )
    (out / QUESTIONS_FILES["hotpotqa"]).parent.mkdir(parents=True, exist_ok=True)
    (out / QUESTIONS_FILES["hotpotqa"]).write_text(_jsonl(iter(questions)), "utf-8")
    (out / CORPUS_FILE).write_text(_jsonl(iter(pages.values())), "utf-8")
    texts = {key: str(page["text"]) for key, page in pages.items()}
    return len(questions), texts


def build_fever(paper_dev: Path, out: Path, wiki: dict[str, str]) -> int:
    """The SUPPORTS/REFUTES claims with an evidence set whose pages are all in the wiki."""
    claims: list[JSONObject] = []
    for line in paper_dev.read_bytes().splitlines():
        row = json.loads(line) if line.strip() else None
        if not isinstance(row, dict) or row.get("label") not in ("SUPPORTS", "REFUTES"):
            continue
        evidence = row.get("evidence")
        for group in _items(evidence):
            cited = [e for e in _items(group) if isinstance(e, list) and len(e) == 4]
            titles = [fever_title(str(e[2])) for e in cited]
            if titles and all(_key(t) in wiki for t in titles):
                claims.append(
                    {
                        "id": row["id"],
                        "label": row["label"],
                        "claim": row.get("claim"),
                        "evidence_set": [[e[2], e[3]] for e in cited],
                        "pages": {t: wiki[_key(t)] for t in titles},
                    }
                )
                break
    path = out / QUESTIONS_FILES["fever"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(claims, ensure_ascii=False, indent=1) + "\n", "utf-8")
    return len(claims)


def fetch_all(console: Console | None = None) -> Path:
    """Download what is missing, build the data folder, swap it in; return its path."""
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    downloads = cache_root() / "downloads"
    files: dict[str, Path] = {}
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    ) as progress:
        for remote in REMOTES:
            files[remote.name] = download(remote, downloads, progress)
    return _build(files)


def _build(files: dict[str, Path]) -> Path:
    """The data folder from verified downloads, built aside and renamed into place."""
    final = cache_dir()
    building = final.with_name(f"{final.name}.part")
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    questions, wiki = build_hotpot(files["hotpot_dev_distractor_v1.json"], building)
    claims = build_fever(files["paper_dev.jsonl"], building, wiki)
    prompts = building / PROMPTS_DIR
    prompts.mkdir()
    for name in ("prompts_naive.json", "fever.json"):
        shutil.copyfile(files[name], prompts / name)
    for name in ("hotpotqa_instruction.txt", "LICENSE"):  # the instruction lives in the
        shutil.copyfile(sample_dir() / PROMPTS_DIR / name, prompts / name)  # paper's notebook
    manifest = {
        "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "counts": {"questions": questions, "pages": len(wiki), "claims": claims},
        "sources": [
            {"name": r.name, "url": r.source_url(), "sha256": sha256_of(files[r.name])}
            for r in REMOTES
        ],
    }
    (building / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", "utf-8")
    old = final.with_name(f"{final.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    building.rename(final)
    shutil.rmtree(old, ignore_errors=True)
    return final
