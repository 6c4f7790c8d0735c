"""The experiment's own code, run contained: in a child process, under a time limit, from its sealed source.

A gold program is code the experiment brings, and `judge run`, `verify`, `view` and `export` all call it; verify runs
a glue again too. Called in the harness's own process such code could end that process (`sys.exit`, `os._exit`),
hang it or crash it, and so decide the command's exit status: a verify that exits 0 having printed nothing. Here
it runs in a child process started by a fork server (no thread, model or open file of the harness is copied into
it; 'spawn' where the platform has no fork server), which imports it from its sealed source (arms.glue: the import
hook lives in the child) and calls it on a whole batch, streaming each outcome back over a pipe: one child per
batch, never one per call (`run_contained` for a gold program's answers, `GlueSession` for a glue's rows, whose
model calls come back to the caller). The import, and then each call, must finish within the registered limit; at
the deadline the child is killed. An exit, a crash or a hang is an outcome that says what happened (`Outcome`
"stopped"), never the harness's exit.
"""
from __future__ import annotations

import hashlib
import inspect
import multiprocessing
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from core.crash import PR_SET_PDEATHSIG, signal_name
from core.errors import BadInput

from .glue import import_source, load_glue


class NotLoaded(Exception):
    """The code could not be made callable. `kind`: "sealed" (the seal refused a file: `file`, `line`, `field` name
    it), "syntax" (`file`, `line`), "raised" (its import or the lookup of the function raised), "not-callable",
    "signature" (it cannot take the arguments), "stopped" (its import exited, crashed or ran past the limit)."""

    def __init__(self, kind: str, text: str, file: str | None = None, line: int | None = None,
                 field: str | None = None):
        super().__init__(text)
        self.kind, self.text, self.file, self.line, self.field = kind, text, file, line, field

    def parts(self) -> tuple[str, str, str | None, int | None, str | None]:
        return self.kind, self.text, self.file, self.line, self.field


@dataclass(frozen=True)
class Outcome:
    """What one call did. `kind`: "value" (it returned an int or None: `value`), "other" (it returned anything
    else: `value` is its repr), "raised" (`value` is "Type: message"), "stopped" (it exited, crashed or ran past the
    limit: `value` says which; no call after it was made); for a glue, "answer" (`value`: its final answer),
    "unanswered" (a model call had no reply) and "skipped" (not run: the session had stopped, `value` says how)."""

    kind: str
    value: Any


def load_function(path: Path, function: str, exp_dir: Path, probe: tuple) -> Callable:
    """`function` of the Python file `path` in experiment folder `exp_dir`, run from its sealed source in this
    process, checked to accept arguments like `probe`. Raises NotLoaded (never a traceback of the code's own)."""
    name = f"_sealed_{Path(path).stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:12]}"
    try:
        fn = getattr(import_source(Path(path), name, Path(exp_dir)), function)
    except BadInput as e:
        raise NotLoaded("sealed", e.message, e.file, e.line, e.field) from None
    except SyntaxError as e:
        raise NotLoaded("syntax", str(e.msg), e.filename or str(path), e.lineno) from None
    except Exception as e:  # noqa: BLE001 - user code: whatever it raises is named, never a traceback
        raise NotLoaded("raised", _text(e)) from None
    if not callable(fn):
        raise NotLoaded("not-callable", "is not callable")
    try:
        inspect.signature(fn).bind(*probe)
    except TypeError:
        raise NotLoaded("signature", "cannot take the arguments it is called with") from None
    except ValueError:
        pass  # no signature to read (a builtin): calling it will tell
    return fn


def _text(e: BaseException) -> str:
    try:
        return f"{type(e).__name__}: {e}"
    except Exception:  # noqa: BLE001 - an exception whose str() raises
        return f"{type(e).__name__}: <unprintable>"


def _exit_text(e: BaseException) -> str:
    try:
        return f"exited ({type(e).__name__}({', '.join(map(repr, e.args))}))"
    except Exception:  # noqa: BLE001
        return f"exited ({type(e).__name__})"


def _where() -> tuple[str, dict[str, str], list[str]]:
    """The caller's folder, environment and import path as they are now, for `_enter`."""
    return os.getcwd(), dict(os.environ), list(sys.path)


def _enter(where: tuple[str, dict[str, str], list[str]]) -> None:
    """A child's first step: die with its parent (a harness killed must leave no hung program running: the fork
    server ends with the harness), and work in the caller's folder, environment and import path as they are now (a
    fork server's child would otherwise have the server's)."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    cwd, env, path = where
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    sys.path[:] = path


def _serve(conn, path: str, function: str, exp_dir: str, probe: tuple, calls: list[tuple], where: tuple) -> None:
    """The child: import, then call on each argument tuple, sending one message per step."""
    _enter(where)
    try:
        fn = load_function(Path(path), function, Path(exp_dir), probe)
    except NotLoaded as e:
        conn.send(("not-loaded", e.parts()))
        return
    except BaseException as e:  # noqa: BLE001 - SystemExit or KeyboardInterrupt at import: reported, then the end
        conn.send(("stopped", _exit_text(e)))
        return
    conn.send(("loaded", None))
    for args in calls:
        try:
            conn.send(call_outcome(fn, args))
        except BaseException as e:  # noqa: BLE001 - an exit: no call after it
            conn.send(("stopped", _exit_text(e)))
            return


def call_outcome(fn: Callable, args: tuple) -> tuple[str, Any]:
    """One call of user code as the child reports it (kind, value): "value" for an int or None, "other" with the
    repr of anything else, "raised" with the exception's text. An exit (a BaseException) passes through: it ends
    the child."""
    try:
        got = fn(*args)
    except Exception as e:  # noqa: BLE001 - user code: this call's outcome
        return "raised", _text(e)
    if got is None or type(got) is int:
        return "value", got
    try:
        return "other", repr(got)
    except Exception:  # noqa: BLE001
        return "other", f"<unprintable {type(got).__name__}>"


def _context():
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["__main__", __name__])  # imported once by the server, never again by a child
    return ctx


def _receive(conn, child, limit: float) -> tuple[str, Any]:
    if not conn.poll(limit):
        return "stopped", f"did not finish within its time limit of {limit:g} s and was stopped"
    try:
        return conn.recv()
    except EOFError:
        child.join()
        code = child.exitcode
        return "stopped", (f"crashed ({signal_name(code)})" if code is not None and code < 0 else
                           f"ended the process (exit status {code})")


def run_contained(path: Path, function: str, exp_dir: Path, probe: tuple, calls: Sequence[tuple],
                  limit: float) -> Iterator[Outcome]:
    """`function` of `path` (sealed in `exp_dir`) called on each argument tuple of `calls`, in a child process: one
    Outcome per call, in order; after a "stopped" outcome nothing more. Raises NotLoaded before the first outcome
    when the code cannot be made callable (kind "stopped" when its import exits, crashes or runs past `limit`)."""
    ctx = _context()
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_serve, args=(send, str(path), function, str(exp_dir), tuple(probe), list(calls),
                                             _where()))
    child.start()
    send.close()
    done = False
    try:
        kind, value = _receive(receive, child, limit)
        if kind == "not-loaded":
            raise NotLoaded(*value)
        if kind == "stopped":
            raise NotLoaded("stopped", f"{value} while being imported")
        for _ in calls:
            kind, value = _receive(receive, child, limit)
            yield Outcome(kind, value)
            if kind == "stopped":
                return
        done = True
    finally:
        receive.close()
        _end(child, limit if done else 0)


def _end(child, grace: float) -> None:
    """Let a child that finished exit (its output flushed) within `grace` seconds, else kill it."""
    child.join(grace)
    if child.is_alive():
        child.kill()
        child.join()


class Unanswered(Exception):
    """Raised inside contained glue by its `call_model` when the caller has no reply for that call."""


def _glue_serve(conn, import_path: str, exp_dir: str, where: tuple) -> None:
    """The child of a GlueSession: load the glue once, then run it on each question it is sent, asking the parent
    for each model call's reply."""
    _enter(where)
    failure = None
    try:
        glue = load_glue(import_path, Path(exp_dir))
    except BadInput as e:
        conn.send(("not-loaded", (e.file, e.message, e.line, e.field)))
        return
    except Exception as e:  # noqa: BLE001 - an import that raises: each row's outcome, as when run in process
        glue, failure = None, _text(e)
    except BaseException as e:  # noqa: BLE001 - an exit at import: reported, then the end
        conn.send(("stopped", _exit_text(e)))
        return
    conn.send(("loaded", None))

    def call_model(messages):
        conn.send(("ask", messages))
        kind, reply = conn.recv()
        if kind != "reply":
            raise Unanswered
        return reply

    while True:
        try:
            kind, question = conn.recv()
        except EOFError:
            return
        if kind != "call":
            return
        if glue is None:
            conn.send(("raised", failure))
            continue
        try:
            answer = glue(question, call_model, Path(exp_dir)).answer
        except Unanswered:
            conn.send(("unanswered", None))
            continue
        except Exception as e:  # noqa: BLE001 - user code: this row's outcome
            conn.send(("raised", _text(e)))
            continue
        except BaseException as e:  # noqa: BLE001 - an exit: no row after it
            conn.send(("stopped", _exit_text(e)))
            return
        try:
            conn.send(("answer", answer))
        except Exception:  # noqa: BLE001 - an answer that cannot be sent back is shown as its repr
            conn.send(("answer", repr(answer)))


class GlueSession:
    """A registered glue run again, row after row, in one child process (verify re-derives a glue arm's calls and
    answer from the recorded replies): the child imports it once from its sealed source (arms.glue.load_glue) and
    each model call it makes comes back to this process, whose `call_model` answers it (None: no reply, which the
    glue sees as `Unanswered`). Each step (the import, a row's start, each reply) must be answered within `limit`
    seconds. A glue that exits, crashes or hangs ends the session: the run it happened in (or the first, if it
    happened at import) is "stopped", every later one "skipped", both saying how. A glue that cannot be imported
    here is BadInput, as arms.glue.load_glue says."""

    def __init__(self, import_path: str, exp_dir: Path, limit: float):
        ctx = _context()
        self.conn, there = ctx.Pipe()
        self.child = ctx.Process(target=_glue_serve, args=(there, import_path, str(exp_dir), _where()))
        self.child.start()
        there.close()
        self.limit, self.stopped, self.told = limit, None, False
        kind, value = _receive(self.conn, self.child, limit)
        if kind == "not-loaded":
            self.close()
            file, message, line, field = value
            raise BadInput(file, message, line=line, field=field)
        if kind == "stopped":
            self._stop(f"{value} while being imported")

    def run(self, question: Any, call_model: Callable[[Any], Any]) -> Outcome:
        """The glue on one question: Outcome "answer" (its final answer), "unanswered" (a call had no reply),
        "raised", "stopped" (it exited, crashed or hung: `value` says which) or "skipped" (it had stopped before)."""
        if self.stopped is not None:
            told, self.told = self.told, True
            return Outcome("skipped" if told else "stopped", self.stopped)
        self._send(("call", question))
        while True:
            kind, value = _receive(self.conn, self.child, self.limit)
            if kind != "ask":
                break
            reply = call_model(value)
            self._send(("unanswered", None) if reply is None else ("reply", reply))
        if kind == "stopped":
            self._stop(value)
            self.told = True
        return Outcome(kind, value)

    def _stop(self, what: str) -> None:
        self.stopped = what
        self.close()

    def _send(self, message: tuple) -> None:
        try:
            self.conn.send(message)
        except OSError:  # the child is gone: the next receive says how
            pass

    def close(self) -> None:
        """End the session: a child between rows is told to exit (its output flushed), one mid-row killed."""
        if self.stopped is None:
            self._send(("close", None))
        self.conn.close()
        _end(self.child, self.limit if self.stopped is None else 0)
