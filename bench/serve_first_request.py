"""What a tool request costs on ``tao serve`` with the embedded model, first and second.

    python bench/serve_first_request.py                      # starts tao serve --port 0
    python bench/serve_first_request.py --base-url http://127.0.0.1:8000/v1   # any server

Four requests through the official ``openai`` SDK, one after another, temperature 0:

1. ``first``: a question with a block of four tools (the server's first request);
2. ``second``: another question, the same tools (the tools block is in the KV cache);
3. ``no tools``: a plain question, which cuts the live context short;
4. ``tools again``: a third question with the same tools (the saved context of the tools
   block is restored, :mod:`tao.models.kvstates`).

For each: seconds, prompt tokens, the prompt tokens the model really evaluated (prompt
tokens less ``usage.prompt_tokens_details.cached_tokens``; a server that does not report
it counts as evaluating all), generated tokens, and what came back (the call, or the
content). Seconds depend on the machine's load (printed); tokens do not.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }
    for name, description, properties, required in [
        (
            "calculator",
            "Evaluate an arithmetic expression and return the number.",
            {"expression": {"type": "string", "description": "e.g. 2 * (3 + 4)"}},
            ["expression"],
        ),
        (
            "read_file",
            "Read a text file of the workspace and return its content.",
            {"path": {"type": "string", "description": "relative to the workspace"}},
            ["path"],
        ),
        (
            "write_file",
            "Write text to a file of the workspace, replacing what it held.",
            {
                "path": {"type": "string", "description": "relative to the workspace"},
                "content": {"type": "string", "description": "the whole new content"},
            },
            ["path", "content"],
        ),
        (
            "search",
            "Search the wiki and return the first paragraph of the best page.",
            {
                "query": {"type": "string", "description": "a page title or keywords"},
                "limit": {"type": "integer", "description": "pages to consider, 1-5"},
            },
            ["query"],
        ),
    ]
]

REQUESTS: list[tuple[str, str, bool]] = [
    ("first", "What is 17 * 23 + 4? Use the calculator.", True),
    ("second", "Read the file notes.txt.", True),
    ("no tools", "Say hello in French.", False),
    ("tools again", "What is 3 * 99? Use the calculator.", True),
]


@dataclass
class Measured:
    label: str
    seconds: float
    prompt_tokens: int
    evaluated: int
    completion_tokens: int
    answer: str


@contextmanager
def served(threads: int | None) -> Iterator[str]:
    """``tao serve --model local --port 0`` from this tree; yields its base URL."""
    command = [sys.executable, "-m", "tao", "serve", "--model", "local", "--port", "0"]
    command += ["--quiet", *(["--threads", str(threads)] if threads else [])]
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        match = re.search(r"http://127\.0\.0\.1:\d+/v1", proc.stdout.readline())
        if match is None:
            raise SystemExit("tao serve did not start")
        yield match.group(0)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def measure(client: Any, label: str, question: str, tools: bool) -> Measured:
    started = time.monotonic()
    reply = client.chat.completions.create(
        model="local",
        messages=[{"role": "user", "content": question}],
        temperature=0,
        max_tokens=200,
        **({"tools": TOOLS} if tools else {}),
    )
    seconds = time.monotonic() - started
    usage = reply.usage
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0
    message = reply.choices[0].message
    if message.tool_calls:
        call = message.tool_calls[0].function
        answer = f"call {call.name}({call.arguments}); content={message.content!r}"
    else:
        answer = f"content={message.content!r}"
    return Measured(
        label,
        seconds,
        usage.prompt_tokens,
        usage.prompt_tokens - cached,
        usage.completion_tokens,
        answer,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", help="measure this server instead of starting one")
    parser.add_argument("--threads", type=int, help="tao serve --threads")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON too")
    args = parser.parse_args()
    import openai

    def run(base_url: str) -> list[Measured]:
        client = openai.OpenAI(base_url=base_url, api_key="none", max_retries=0, timeout=1800)
        rows = []
        for label, question, tools in REQUESTS:
            rows.append(measure(client, label, question, tools))
            row = rows[-1]
            print(
                f"{row.label:12} {row.seconds:7.1f} s  prompt {row.prompt_tokens:4}  "
                f"evaluated {row.evaluated:4}  generated {row.completion_tokens:4}  "
                f"{row.answer[:100]}",
                flush=True,
            )
        return rows

    print(f"load average before: {os.getloadavg()}", flush=True)
    if args.base_url:
        rows = run(args.base_url)
    else:
        started = time.monotonic()
        with served(args.threads) as base_url:
            print(f"tao serve listening after {time.monotonic() - started:.1f} s", flush=True)
            rows = run(base_url)
    print(f"load average after: {os.getloadavg()}", flush=True)
    if args.json:
        print(json.dumps([row.__dict__ for row in rows], indent=2))


if __name__ == "__main__":
    main()
