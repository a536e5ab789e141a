"""No process in the sandbox may read or steer another one's memory (SPEC S10; issue 26).

The sandbox's own PID namespace hides tao and every other process of the host. Inside
it, though, a test shares its uid with bubblewrap's init process (PID 1, the one that
dies with tao and takes the namespace with it): as an ordinary user the test could
``ptrace`` it, and a traced init no longer has to die with its parent. So every
sandboxed command starts under a seccomp filter that answers ``EPERM`` to the system
calls that read, write or control another process: ``ptrace``, ``process_vm_readv``,
``process_vm_writev``, ``pidfd_getfd`` (take another process's open file) and
``perf_event_open`` (which can sample another process's registers and stack). A filter
cannot be removed, and every process the command starts inherits it. System calls of
another ABI (32-bit ``int 0x80``, x32) are refused whole: their numbers differ.

A debugger inside the tests (``gdb -p``, ``strace``) therefore fails; nothing else a
test suite ordinarily does is refused. Where the machine is neither x86-64 nor AArch64
no filter is installed, and ``docs/security.md`` says so.

The filter is installed by a few lines of Python (:data:`INSTALL`) run by the
interpreter tao runs on, which then executes the command in its place: bubblewrap's
own ``--seccomp`` needs an open descriptor, which the MCP SDK's launcher cannot pass.
"""

from __future__ import annotations

import platform
import struct
import sys

#: ``AUDIT_ARCH_*`` of the machine, and the numbers of the refused system calls there:
#: ptrace, process_vm_readv, process_vm_writev, perf_event_open, pidfd_getfd.
ARCHES = {
    "x86_64": (0xC000003E, (101, 310, 311, 298, 438)),
    "aarch64": (0xC00000B7, (117, 270, 271, 241, 438)),
}
#: x32 system calls carry this bit on x86-64 (and are refused whole).
_X32 = 0x40000000

_LD_ABS, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06
_ALLOW, _EPERM = 0x7FFF0000, 0x00050000 | 1


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def program(machine: str | None = None) -> bytes | None:
    """The classic-BPF filter for ``machine`` (``platform.machine()``), or ``None`` where
    tao does not know its system call numbers."""
    known = ARCHES.get(machine or platform.machine())
    if known is None:
        return None
    arch, refused = known
    count = len(refused)
    # deny sits after the allow: each check jumps forward to it on a match
    ops = [_op(_LD_ABS, 4), _op(_JEQ, arch, 1, 0), _op(_RET, _EPERM), _op(_LD_ABS, 0)]
    ops.append(_op(_JGE, _X32, count + 1, 0))
    ops += [_op(_JEQ, number, count - index, 0) for index, number in enumerate(refused)]
    ops += [_op(_RET, _ALLOW), _op(_RET, _EPERM)]
    return b"".join(ops)


#: Installs the filter given as hex in ``argv[1]``, then executes ``argv[2:]``.
INSTALL = """import ctypes, os, sys
code = bytes.fromhex(sys.argv[1])
class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]
libc = ctypes.CDLL(None, use_errno=True)
prog = Prog(len(code) // 8, code)
if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(22, 2, ctypes.byref(prog), 0, 0):
    sys.exit(f"tao sandbox: the seccomp filter failed: {os.strerror(ctypes.get_errno())}")
os.execv(sys.argv[2], sys.argv[2:])
"""


def wrapper() -> list[str]:
    """The words to put before a command so it runs under the filter (``[]`` where there
    is no filter for this machine)."""
    code = program()
    if code is None:
        return []
    return [sys.executable, "-I", "-S", "-c", INSTALL, code.hex()]
