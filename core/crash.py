"""A native crash is never the user's only message.

llama.cpp runs in our process; when it dies (SIGILL on a CPU it mis-detects, a segfault on a
broken file) Python cannot catch it, and the user would see only "Illegal instruction" and exit
132. So each CLI runs its work in a child process (`supervise`): the parent only waits, and when
the child dies by a signal it exits 2 with the cause, what native step was running (`step` notes
it in a small file the parent reads), the Python stack at the crash (faulthandler) and the remedy.
Raw files are append-only and written record by record, so nothing finished is lost: re-running
resumes. Measured cost: one extra interpreter start per command (BENCHMARKS.md).
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

CONTEXT_ENV = "BLINDEVAL_CRASH_CONTEXT"  # set in the child: where it notes the native step it is in
PARENT_ENV = "BLINDEVAL_SUPERVISOR_PID"
PR_SET_PDEATHSIG = 1
CRASH_SIGNALS = (signal.SIGILL, signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGABRT, signal.SIGSYS,
                 signal.SIGTRAP)

_steps: list[dict[str, Any]] = []


SIGNAL_NAMES = {signal.SIGILL: "SIGILL (illegal instruction)", signal.SIGSEGV: "SIGSEGV (invalid memory access)",
                signal.SIGBUS: "SIGBUS (bus error)", signal.SIGFPE: "SIGFPE (arithmetic fault)",
                signal.SIGABRT: "SIGABRT (aborted)"}


def signal_name(returncode: int) -> str:
    sig = -returncode
    try:
        return SIGNAL_NAMES.get(signal.Signals(sig), signal.Signals(sig).name)
    except ValueError:
        return f"signal {sig}"


def _note() -> None:
    path = os.environ.get(CONTEXT_ENV)
    if path:
        with open(path, "w", encoding="utf-8") as f:
            f.write(json.dumps(_steps[-1] if _steps else {}))


@contextlib.contextmanager
def step(what: str, **facts: Any) -> Iterator[None]:
    """Note the native step about to run, so a crash inside it can be named. Nests; cheap (one small write)."""
    _steps.append({"step": what, **facts})
    _note()
    try:
        yield
    finally:
        _steps.pop()
        _note()


PORTABLE_BUILD = ("CMAKE_ARGS=\"-DGGML_NATIVE=OFF\" pip install --force-reinstall --no-cache-dir "
                  "llama-cpp-python==0.3.36")


def diagnosis(sig: int, extra_buffers: bool | None, build_amx: bool | None, cpu_amx: bool | None) -> str:
    """The cause and remedy of a native crash by signal `sig` in a llama.cpp step, from what was in effect there.

    AMX is named only where the crash can be its: a SIGILL while CPU extra buffers were on, in a build that uses
    AMX, on a CPU that reports it (llama.cpp's AMX weight buffers, the known upstream bug). Any other crash gets
    an honest generic cause, and a remedy never offers the setting already in effect: `cpu_extra_buffers =
    false` is suggested only when extra buffers were on (None: not known, so neither offered nor said off)."""
    if sig == signal.SIGILL and extra_buffers and build_amx and cpu_amx:
        return ("Cause: most likely llama.cpp's AMX weight buffers: CPU extra buffers were on, this llama.cpp build "
                "uses Intel AMX and the CPU reports AMX, and those buffers crash with SIGILL on such CPUs. Remedy: "
                "register [runtime] cpu_extra_buffers = false (or \"auto\", which turns them off on this machine).")
    off = " (CPU extra buffers were already off)" if extra_buffers is False else ""
    if sig == signal.SIGILL:
        cause = f"Cause: llama.cpp executed an instruction this CPU does not support{off}."
        rebuild = f"rebuild llama-cpp-python for a portable CPU target: {PORTABLE_BUILD}"
        if extra_buffers:
            return (f"{cause} Remedy: re-run with [runtime] cpu_extra_buffers = false in prereg.toml (no weights "
                    f"repacked for this CPU's instructions); if it still crashes, {rebuild}")
        return f"{cause} Remedy: {rebuild}"
    cause = (f"Cause: not known: llama.cpp itself failed{off}, from a damaged or unsupported model file or a llama.cpp "
             "bug.")
    check = ("check the model file against its registered sha256, and if it is intact, report the crash to "
             "llama.cpp with what this message names")
    if extra_buffers:
        return (f"{cause} Remedy: re-run with [runtime] cpu_extra_buffers = false in prereg.toml (rules out the "
                f"repacked weights); if it still crashes, {check}.")
    return f"{cause} Remedy: {check}."


def _die_with_parent() -> None:
    """A supervisor killed with SIGKILL must not leave its child running: Linux kills it too (PR_SET_PDEATHSIG)."""
    parent = os.environ.get(PARENT_ENV)
    if not parent or not sys.platform.startswith("linux"):
        return
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != int(parent):  # the parent died before the request took effect
        os._exit(128 + signal.SIGKILL)


def _child() -> None:
    import faulthandler

    _die_with_parent()

    trace = open(os.environ[CONTEXT_ENV] + ".trace", "w", encoding="utf-8")  # noqa: SIM115 - lives with the process
    faulthandler.enable(file=trace, all_threads=True)


def _describe(returncode: int, context: Path) -> tuple[int, str]:
    sig = -returncode
    name = signal.Signals(sig).name if sig in signal.Signals.__members__.values() else f"signal {sig}"
    kept = "Finished records are kept: fix the cause and re-run to resume."
    if sig not in CRASH_SIGNALS:
        why = " (from outside: a user, or the out-of-memory killer)" if sig == signal.SIGKILL else ""
        return 128 + sig, f"stopped by {name}{why}. {kept}"
    try:
        note = json.loads(context.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        note = {}
    try:
        trace = Path(str(context) + ".trace").read_text(errors="replace").splitlines()
    except OSError:
        trace = []
    current = next((i for i, line in enumerate(trace) if line.startswith("Current thread")), None)
    stack = [line for line in trace[current + 1:] if line.strip()][:12] if current is not None else []
    if note.get("step"):
        message = (f"the process crashed in native code with {signal_name(returncode)} while {note['step']}.\n  "
                   f"{diagnosis(sig, note.get('extra_buffers'), note.get('build_amx'), note.get('cpu_amx'))}")
    else:  # outside any llama.cpp step: glue code, another native library, or the interpreter itself
        message = (f"the process crashed with {signal_name(returncode)} outside llama.cpp (no model was loading or "
                   "generating); the Python stack below shows where.")
    message += f"\n  {kept}"
    if stack:
        message += ("\n  Python stack at the crash (most recent call first):\n"
                    + "\n".join(f"  {line}" for line in stack))
    return 2, message


def supervise(module: str, main: Callable[[], int]) -> int:
    """Run `python -m module` with this process's arguments in a child and turn a native crash into exit 2."""
    if os.environ.get(CONTEXT_ENV):
        _child()
        return main()
    with tempfile.TemporaryDirectory(prefix="blindeval-") as d:
        context = Path(d) / "context"
        context.write_text("{}")
        proc = subprocess.Popen([sys.executable, "-m", module, *sys.argv[1:]],
                                env={**os.environ, CONTEXT_ENV: str(context), PARENT_ENV: str(os.getpid())})
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the child (same process group); it says so
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, lambda s, _f: proc.send_signal(s))
        returncode = proc.wait()
        if returncode >= 0:
            return returncode
        code, message = _describe(returncode, context)
        print(f"error: {message}", file=sys.stderr)
        return code
