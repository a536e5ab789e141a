"""Building the embedded model's runtime (issue 30, Setup): visible progress, a log to read
when it fails, and a build of only what the Python bindings load.

The build itself takes minutes and needs the network, so it is not run here: each part is
tested with the real thing it drives (pip in a child process, CMake configuring a project
shaped like llama-cpp-python's), and the README records the timed builds.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tao.models.install import (
    BUILD_MINUTES,
    DEFAULT_CMAKE_ARGS,
    BuildProgress,
    _pip_streaming,
    cmake_args,
)

#: What ``pip install -v`` prints while it builds llama-cpp-python (abridged from a real log).
PIP_VERBOSE = """\
Using pip 26.1 from /venv/lib/python3.11/site-packages/pip (python 3.11)
Collecting llama-cpp-python==0.3.36 (from -r runtime.txt (line 1))
  Downloading llama_cpp_python-0.3.36.tar.gz (76.6 MB)
  Running command pip subprocess to install build dependencies
  Installing build dependencies: finished with status 'done'
Building wheels for collected packages: llama-cpp-python
  Building wheel for llama-cpp-python (pyproject.toml): started
  Running command Building wheel for llama-cpp-python (pyproject.toml)
  *** Configuring CMake...
  -- The C compiler identification is GNU 12.2.0
  [1/83] Building C object vendor/llama.cpp/ggml/src/CMakeFiles/ggml-base.dir/ggml.c.o
  [2/83] Building CXX object vendor/llama.cpp/ggml/src/CMakeFiles/ggml-base.dir/ggml.cpp.o
  [41/83] Building CXX object vendor/llama.cpp/src/CMakeFiles/llama.dir/llama-model.cpp.o
"""
PIP_DONE = """\
  Building wheel for llama-cpp-python (pyproject.toml): finished with status 'done'
  Created wheel for llama-cpp-python: filename=llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl
Successfully installed llama-cpp-python-0.3.36
"""


def test_progress_shows_pips_main_lines_and_hides_the_compiler() -> None:
    progress = BuildProgress(30.0, BUILD_MINUTES)
    shown = [line for text in PIP_VERBOSE.splitlines() if (line := progress.line(text))]
    assert shown == [
        "Collecting llama-cpp-python==0.3.36 (from -r runtime.txt (line 1))",
        "  Downloading llama_cpp_python-0.3.36.tar.gz (76.6 MB)",
        "Building wheels for collected packages: llama-cpp-python",
        "  Building wheel for llama-cpp-python (pyproject.toml): started",
    ]
    assert progress.step == (41, 83)  # where ninja is, for the heartbeat


def test_a_heartbeat_every_30_s_while_it_builds_and_none_after() -> None:
    progress = BuildProgress(30.0, "5-10")
    assert progress.beat(1e9) is None  # nothing is building yet: no heartbeat
    for text in PIP_VERBOSE.splitlines():
        progress.line(text)
    assert progress.started is not None
    start = progress.started
    assert progress.beat(start + 10) is None  # not due yet
    assert progress.beat(start + 200) == (
        "building llama.cpp (step 41 of 83, 3 min so far; about 5-10 min on 2 cores the first time)"
    )
    assert progress.beat(start + 215) is None  # 15 s after the last one
    assert progress.beat(start + 231) is not None
    for text in PIP_DONE.splitlines():
        progress.line(text)
    assert progress.beat(start + 400) is None  # built: pip only installs now


def test_pip_runs_for_real_with_its_output_in_the_log(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    _pip_streaming(["--version"], env={}, log=log, progress=BuildProgress(30.0, "5-10"))
    assert "pip " in log.read_text(encoding="utf-8")


def test_a_failed_build_shows_its_last_lines_and_where_the_log_is(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "build.log"
    missing = tmp_path / "no-such-requirements.txt"
    with pytest.raises(subprocess.CalledProcessError):
        _pip_streaming(
            ["install", "--no-index", "-r", str(missing)],
            env={"PATH": "/usr/bin:/bin"},
            log=log,
            progress=BuildProgress(30.0, "5-10"),
        )
    err = capfd.readouterr().err
    assert str(missing) in err  # pip's own complaint, from the tail of its output
    assert f"tao: the whole build log is in {log}" in err
    assert str(missing) in log.read_text(encoding="utf-8")


def test_cmake_args_keep_the_users_flags_last_so_they_win(tmp_path: Path) -> None:
    args = shlex.split(cmake_args(tmp_path, "-DGGML_CUDA=on -DLLAVA_BUILD=ON"))
    assert args[0] == DEFAULT_CMAKE_ARGS
    include = next(a for a in args if a.startswith("-DCMAKE_PROJECT_llama.cpp_INCLUDE="))
    assert Path(include.split("=", 1)[1]).is_file()
    assert args[-2:] == ["-DGGML_CUDA=on", "-DLLAVA_BUILD=ON"]
    spaced = tmp_path / "a folder"
    spaced.mkdir()
    assert any(a.endswith("a folder/skip-common.cmake") for a in shlex.split(cmake_args(spaced)))


#: llama-cpp-python 0.3.36's CMakeLists, reduced to what decides whether llama.cpp's common
#: library is built: the parent forces it on in the cache, the sub-project declares the option.
PARENT = """\
cmake_minimum_required(VERSION 3.21)
project(llama_cpp NONE)
option(LLAVA_BUILD "Build llava" ON)
set(LLAMA_BUILD_COMMON ON CACHE BOOL "Build llama.cpp common library" FORCE)
add_subdirectory(vendor/llama.cpp)
"""
SUBPROJECT = """\
cmake_minimum_required(VERSION 3.14...3.28)
project("llama.cpp" NONE)
option(LLAMA_BUILD_COMMON "llama: build common utils library" OFF)
if (LLAMA_BUILD_COMMON)
    message(STATUS "TAO-PROBE common: built")
else()
    message(STATUS "TAO-PROBE common: skipped")
endif()
"""


@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake (apt-get install cmake)")
@pytest.mark.parametrize(("llava", "expected"), [("OFF", "skipped"), ("ON", "built")])
def test_the_common_library_is_skipped_unless_llava_needs_it(
    llava: str, expected: str, tmp_path: Path
) -> None:
    """A real CMake configure: the cached ``FORCE`` cannot be undone with ``-D``, the
    project include can; and LLaVA (``-DLLAVA_BUILD=ON``), which links it, keeps it."""
    source = tmp_path / "src"
    (source / "vendor" / "llama.cpp").mkdir(parents=True)
    (source / "CMakeLists.txt").write_text(PARENT)
    (source / "vendor" / "llama.cpp" / "CMakeLists.txt").write_text(SUBPROJECT)
    flags = shlex.split(cmake_args(tmp_path, f"-DLLAVA_BUILD={llava}"))
    done = subprocess.run(
        ["cmake", "-S", str(source), "-B", str(tmp_path / "build"), *flags],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert f"TAO-PROBE common: {expected}" in done.stdout
    forced_only = subprocess.run(
        ["cmake", "-S", str(source), "-B", str(tmp_path / "plain"), "-DLLAMA_BUILD_COMMON=OFF"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "TAO-PROBE common: built" in forced_only.stdout  # why the include is needed


def test_the_installer_module_runs_as_documented() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tao.models.install", "--print-requirements", "runtime"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "llama-cpp-python==0.3.36" in done.stdout
