"""Tool-call time limits on the main thread: SIGALRM, one timer shared by a run's calls (L5).

pytest-timeout owns SIGALRM inside a test, so tao takes its thread path there; these
tests run the signal path where users meet it, in a fresh interpreter.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def _python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_slow_call_is_stopped_at_its_limit_and_the_timer_is_shared_then_disarmed() -> None:
    out = _python(
        """
        import signal, time
        from tao.tools import limits
        from tao.tools.limits import Finished, TimedOut, disarm, remaining_s, run_with_limit

        deadline = time.monotonic() + 1.0  # one run: its calls share its deadline
        for _ in range(5):
            done = run_with_limit(lambda: remaining_s(), deadline - time.monotonic())
            assert isinstance(done, Finished) and 0 < done.value <= 1.0, done
        assert limits._timer_at is not None  # kept between the calls
        slow = run_with_limit(lambda: time.sleep(5), deadline - time.monotonic())
        late = time.monotonic() - deadline
        assert isinstance(slow, TimedOut) and -0.05 < late < 0.2, (slow, late)

        quick = run_with_limit(lambda: 7, 0.1)  # its timer rings after the call: harmless
        time.sleep(0.3)
        assert isinstance(quick, Finished) and quick.value == 7
        run_with_limit(lambda: 1, 30.0)
        disarm()
        assert signal.getitimer(signal.ITIMER_REAL)[0] == 0
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_a_timer_the_program_set_is_left_alone() -> None:
    out = _python(
        """
        import signal, time
        from tao.tools.limits import Finished, TimedOut, run_with_limit

        run_with_limit(lambda: 1, 5.0)  # installs tao's handler
        from tao.tools.limits import disarm
        disarm()
        signal.setitimer(signal.ITIMER_REAL, 20.0)  # the program's own timer
        done = run_with_limit(lambda: 2, 0.5)
        slow = run_with_limit(lambda: time.sleep(3), 0.3)  # the thread way instead
        left = signal.getitimer(signal.ITIMER_REAL)[0]
        assert isinstance(done, Finished) and done.value == 2
        assert isinstance(slow, TimedOut)
        assert 15 < left <= 20, left
        print("ok")
        """
    )
    assert out.strip() == "ok"
