"""``tao eval fetch``: the full data is downloaded, verified, cached, and used (issue 30).

A real HTTP server on 127.0.0.1 stands in for the official hosts ($TAO_DATA_MIRROR points
every download at it). Its files are built from the sample shipped in the package, in the
official formats and counts (7,405 HotpotQA dev questions, 9,999 FEVER paper_dev lines),
so the structure checks that stand in for unknown checksums see what they would online.
The real ``tao`` command runs in a child process; nothing leaves the machine.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tao.eval.fetch import FEVER_PAPER_DEV_COUNT, HOTPOT_DEV_COUNT
from tao.eval.sources import sample_dir

from ..conftest import CliResult

SAMPLE = sample_dir()


def _official_hotpot(count: int = HOTPOT_DEV_COUNT) -> bytes:
    """A distractor dev file: the sample's questions first, one wiki page each after them."""
    pages = [json.loads(line) for line in (SAMPLE / "hotpotqa" / "wiki.jsonl").open()]
    by_title = {p["title"]: p for p in pages}
    questions = [json.loads(line) for line in (SAMPLE / "hotpotqa" / "questions_dev.jsonl").open()]

    def context(titles: list[str]) -> list[object]:
        return [[t, by_title[t]["sentences"] or [by_title[t]["text"]]] for t in titles]

    items: list[dict[str, object]] = []
    for index in range(count):
        if index < len(questions):
            q = questions[index]
            items.append(
                {
                    "_id": q["_id"],
                    "question": q["question"],
                    "answer": q["answer"],
                    "type": q["type"],
                    "supporting_facts": [[t, 0] for t in q["supporting_titles"]],
                    "context": context(q["context_titles"]),
                }
            )
            continue
        extra = (
            [pages[index - len(questions)]["title"]] if index - len(questions) < len(pages) else []
        )
        items.append(
            {
                "_id": f"x{index}",
                "question": f"Q{index}?",
                "answer": "a",
                "type": "bridge",
                "supporting_facts": [],
                "context": context(extra),
            }
        )
    return json.dumps(items).encode()


def _official_fever(count: int = FEVER_PAPER_DEV_COUNT) -> bytes:
    """paper_dev.jsonl: the sample's claims with FEVER's evidence format, then NEI claims."""
    claims = json.loads((SAMPLE / "fever" / "claims_on_local_wiki.json").read_text("utf-8"))
    lines = []
    for index in range(count):
        if index < len(claims):
            c = claims[index]
            evidence = [[[1, 2, page, line] for page, line in c["evidence_set"]]]
            row = {
                "id": c["id"],
                "verifiable": "VERIFIABLE",
                "label": c["label"],
                "claim": c["claim"],
                "evidence": evidence,
            }
        else:
            row = {
                "id": 10**6 + index,
                "verifiable": "NOT VERIFIABLE",
                "label": "NOT ENOUGH INFO",
                "claim": f"C{index}.",
                "evidence": [[[1, None, None, None]]],
            }
        lines.append(json.dumps(row))
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture(scope="module")
def official_files() -> dict[str, bytes]:
    prompts = SAMPLE / "react_prompts"
    return {
        "hotpot_dev_distractor_v1.json": _official_hotpot(),
        "paper_dev.jsonl": _official_fever(),
        "prompts_naive.json": (prompts / "prompts_naive.json").read_bytes(),
        "fever.json": (prompts / "fever.json").read_bytes(),
    }


@dataclass
class Mirror:
    """What the server serves (``files``), and how: ``drop`` names files cut off half-way."""

    url: str
    files: dict[str, bytes]
    drop: set[str] = field(default_factory=set)
    requests: list[str] = field(default_factory=list)


@pytest.fixture
def mirror(official_files: dict[str, bytes]) -> Iterator[Mirror]:
    state = Mirror("", dict(official_files))

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            name = self.path.lstrip("/")
            state.requests.append(name)
            body = state.files.get(name)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if name in state.drop:  # a connection that dies half-way through the body
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/data"
    # the handler sees /data/NAME; serve under that prefix
    state.files = {f"data/{k}": v for k, v in state.files.items()}
    yield state
    server.shutdown()
    server.server_close()


def _fetch(tao_cli: Callable[..., CliResult], mirror_url: str) -> CliResult:
    return tao_cli("eval", "fetch", env={"TAO_DATA_MIRROR": mirror_url}, timeout=180)


def _cache(tmp_path: Path) -> Path:
    return tmp_path / "tao-cache"  # $TAO_CACHE_DIR, set for every test by tests/conftest.py


def _leftovers(cache: Path) -> list[str]:
    return sorted(str(p.relative_to(cache)) for p in cache.rglob("*") if p.is_file())


def test_fetch_verifies_caches_and_the_eval_then_runs_on_the_full_data(
    tmp_path: Path, mirror: Mirror, tao_cli: Callable[..., CliResult], replay: Callable[..., Path]
) -> None:
    """P1/P2 data: the official files become the data folder, and ``tao eval`` prefers it."""
    result = _fetch(tao_cli, mirror.url)
    assert result.returncode == 0, result.stderr
    data = _cache(tmp_path) / "eval-data"
    assert f"data: {data}" in result.stderr
    manifest = json.loads((data / "manifest.json").read_text())
    pages = len((SAMPLE / "hotpotqa" / "wiki.jsonl").read_text().splitlines())  # one each
    assert manifest["counts"] == {"questions": HOTPOT_DEV_COUNT, "pages": pages, "claims": 20}
    assert {s["url"] for s in manifest["sources"]} == {
        f"{mirror.url}/{name}"
        for name in (
            "hotpot_dev_distractor_v1.json",
            "paper_dev.jsonl",
            "prompts_naive.json",
            "fever.json",
        )
    }
    questions = (data / "hotpotqa" / "questions_dev.jsonl").read_text().splitlines()
    assert len(questions) == HOTPOT_DEV_COUNT
    first = json.loads(questions[0])
    assert first["question"] == "Were Scott Derrickson and Ed Wood of the same nationality?"
    assert first["supporting_titles"] == ["Ed Wood", "Scott Derrickson"]
    claims = json.loads((data / "fever" / "claims_on_local_wiki.json").read_text())
    pelican = next(c for c in claims if "Pelican" in c["claim"])
    assert list(pelican["pages"]) == ["The Pelican Brief (film)"]  # FEVER's -LRB- titles read
    prompts = data / "react_prompts"
    for name in ("prompts_naive.json", "fever.json", "hotpotqa_instruction.txt", "LICENSE"):
        assert (prompts / name).read_bytes() == (SAMPLE / "react_prompts" / name).read_bytes()
    assert not [p for p in _leftovers(_cache(tmp_path)) if p.endswith(".part")]

    script = replay(["Thought 1: t\nAction 1: Finish[yes]"] * 5)
    run = tao_cli("eval", "hotpotqa", "--model", f"replay:{script}", "--limit", "2")
    assert run.returncode == 0, run.stderr
    assert f"data: the download cache {data}" in run.stderr
    assert "shipped" not in run.stderr

    mirror.requests.clear()  # a second fetch keeps what is already verified
    assert _fetch(tao_cli, mirror.url).returncode == 0
    assert mirror.requests == []


def test_a_corrupted_file_is_a_checksum_error_and_nothing_is_cached(
    tmp_path: Path, mirror: Mirror, tao_cli: Callable[..., CliResult]
) -> None:
    body = mirror.files["data/prompts_naive.json"]
    mirror.files["data/prompts_naive.json"] = body.replace(b"Thought 1", b"Thought 9", 1)
    result = _fetch(tao_cli, mirror.url)
    assert result.returncode == 1
    assert "prompts_naive.json: checksum mismatch (sha256 " in result.stderr
    assert "expected f35e8c17bbd620b9" in result.stderr and "not kept" in result.stderr
    leftovers = _leftovers(_cache(tmp_path))
    assert "downloads/prompts_naive.json" not in leftovers
    assert not [p for p in leftovers if p.endswith(".part") or "eval-data" in p]
    assert "Traceback" not in result.stderr


def test_a_file_of_the_wrong_shape_is_refused(
    tmp_path: Path, mirror: Mirror, tao_cli: Callable[..., CliResult]
) -> None:
    """No pinned sha256 for HotpotQA: its structure (7,405 questions) is what is checked."""
    mirror.files["data/hotpot_dev_distractor_v1.json"] = _official_hotpot(HOTPOT_DEV_COUNT - 1)
    result = _fetch(tao_cli, mirror.url)
    assert result.returncode == 1
    assert "expected a JSON array of 7405 questions, got 7404" in result.stderr
    assert not (_cache(tmp_path) / "eval-data").exists()
    assert not (_cache(tmp_path) / "downloads" / "hotpot_dev_distractor_v1.json").exists()


def test_a_dropped_connection_keeps_nothing_and_the_next_fetch_completes(
    tmp_path: Path, mirror: Mirror, tao_cli: Callable[..., CliResult]
) -> None:
    mirror.drop.add("data/paper_dev.jsonl")
    result = _fetch(tao_cli, mirror.url)
    assert result.returncode == 1
    assert "the download of paper_dev.jsonl from 127.0.0.1:" in result.stderr
    assert "broke off" in result.stderr and "run tao eval fetch again" in result.stderr
    leftovers = _leftovers(_cache(tmp_path))
    assert "downloads/paper_dev.jsonl" not in leftovers
    assert not [p for p in leftovers if p.endswith(".part") or "eval-data" in p]
    mirror.drop.clear()
    mirror.requests.clear()
    assert _fetch(tao_cli, mirror.url).returncode == 0
    assert "data/hotpot_dev_distractor_v1.json" not in mirror.requests  # kept, verified
    assert (_cache(tmp_path) / "eval-data" / "manifest.json").is_file()


def test_offline_fetch_says_so_in_one_line_and_the_sample_still_runs(
    tao_cli: Callable[..., CliResult], replay: Callable[..., Path]
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = _fetch(tao_cli, f"http://127.0.0.1:{port}")
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith(f"Error: cannot reach 127.0.0.1:{port}: ")
    assert errors[0].endswith(
        "the shipped sample is used until tao eval fetch succeeds (run it when online)"
    )
    script = replay(["Thought 1: t\nAction 1: Finish[yes]"] * 3)
    run = tao_cli("eval", "hotpotqa", "--model", f"replay:{script}", "--limit", "1")
    assert run.returncode == 0, run.stderr
    assert "data: the shipped 20-question sample" in run.stderr
    assert "tao eval fetch" in run.stderr


def test_a_mirror_must_be_http(tao_cli: Callable[..., CliResult]) -> None:
    result = _fetch(tao_cli, "file:///etc")
    assert result.returncode == 1
    assert "$TAO_DATA_MIRROR must be an http:// or https:// URL" in result.stderr


def test_a_named_data_folder_wins_and_a_missing_one_is_a_usage_error(
    tmp_path: Path, tao_cli: Callable[..., CliResult], replay: Callable[..., Path]
) -> None:
    script = replay(["Thought 1: t\nAction 1: Finish[SUPPORTS]"] * 3)
    args = ("eval", "fever", "--model", f"replay:{script}", "--limit", "1")
    missing = tmp_path / "no-data"
    result = tao_cli(*args, "--data", str(missing))
    assert result.returncode == 2 and f"--data {missing}: no such folder" in result.stderr
    result = tao_cli(*args, env={"TAO_EVAL_DATA": str(missing)})
    assert result.returncode == 2 and f"$TAO_EVAL_DATA {missing}: no such folder" in result.stderr
    result = tao_cli(*args, env={"TAO_EVAL_DATA": str(SAMPLE)})
    assert result.returncode == 0, result.stderr
    assert f"data: the data folder {SAMPLE}" in result.stderr
