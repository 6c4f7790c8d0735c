"""The gold program: `[gold] program = "file.py:function"`, run from its sealed source in a child process under
`[gold] timeout_s` (arms.contained), called as ``function(question, reference, answer)``; it returns a score on the
rubric's scale, or None where code cannot decide. A program that raises, or returns anything else, gives that answer
a gold ``error`` naming the program, the question and the answer's label (never a traceback); one that exits, crashes
or hangs gives that answer, and every one after it, an error saying so; a program that cannot be imported, or stops
on a reference answer, is bad input before the first model call (`check_program`)."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from arms.contained import NotLoaded, Outcome, load_function, run_contained
from core.errors import BadInput
from core.text import shown
from registration.gold import GOLD_PROGRAM, at_key
from registration.prereg import Experiment
from registration.questions import Question
from registration.seal import inside

GoldProgram = Callable[[Question, "str | None", str], "int | None"]
PROBE = (None, None, "")  # arguments like those the program must accept: (question, reference, answer)
ProgramResult = tuple[str, "int | None", "str | None"]  # (status, score, error) of program_scores


def _program_file(exp: Experiment) -> tuple[str, Path, str] | None:
    """(spec, file, function) of the registered gold program; None when none is registered."""
    spec = exp.gold.value("program") if exp.gold else None
    if spec is None:
        return None
    m = GOLD_PROGRAM.match(spec)
    path = inside(exp.dir, m.group("file"), exp.dir / "prereg.toml", "program")
    if not path.is_file():
        raise at_key(exp.dir, f"gold program {spec!r}: no file {path}", "program")
    return spec, path, m.group("function")


def _not_loaded(exp: Experiment, spec: str, e: NotLoaded) -> BadInput:
    """Why the gold program cannot be called, as bad input naming prereg.toml's `program` (or the file at fault)."""
    if e.kind == "sealed":
        return BadInput(e.file, e.text, line=e.line, field=e.field)
    if e.kind == "syntax":
        return BadInput(e.file, f"gold program {spec!r} cannot be imported: {e.text}", line=e.line, field="program")
    what = {"raised": f"cannot be imported: {e.text}", "signature": "must take (question, reference, answer)",
            "stopped": f"{e.text}: it must import and return, never end or hang the process"}
    return at_key(exp.dir, f"gold program {spec!r} {what.get(e.kind, e.text)}", "program")


def load_program(exp: Experiment) -> GoldProgram | None:
    """The registered gold program, imported from its sealed source into this process; None when none is
    registered. Anything that stops it from being called as (question, reference, answer) is bad input naming
    prereg.toml's `program`. The harness itself calls it contained (`program_scores`); this is for testing a
    program's own rules."""
    found = _program_file(exp)
    if found is None:
        return None
    spec, path, function = found
    try:
        return load_function(path, function, exp.dir, PROBE)
    except NotLoaded as e:
        raise _not_loaded(exp, spec, e) from None


def program_scores(exp: Experiment, calls: list[tuple[Question, str, str]],
                   scale: tuple[int, ...]) -> tuple[list[tuple[str, int | None, str | None]], str | None]:
    """(status, score, error) of the gold program on each (question, answer, label) of `calls` ("scored",
    "undecided" for None, or "error"), and what stopped it, if it stopped. It runs contained (arms.contained): in one
    child process for the whole batch, each call within `[gold] timeout_s`. A program that exits, crashes or runs
    past the limit gives the answer it was scoring an error saying so, and every answer after it an error naming
    that one; a program that cannot be imported is bad input naming prereg.toml's `program`."""
    spec, path, function = _program_file(exp)
    args = [(q, q.reference, answer) for q, answer, _ in calls]
    out: list[tuple[str, int | None, str | None]] = []
    stopped = None
    try:
        for n, outcome in enumerate(run_contained(path, function, exp.dir, PROBE, args, exp.gold.timeout_s)):
            q, _, label = calls[n]
            if outcome.kind == "stopped":
                stopped = f"gold program {spec} {outcome.value} on question {q.id!r} (answer {label})"
                out.append(("error", None, stopped))  # and the last outcome: the child is gone
            else:
                out.append(_program_outcome(outcome, spec, q, label, scale))
    except NotLoaded as e:
        raise _not_loaded(exp, spec, e) from None
    out += [("error", None, f"gold program {spec} was not called on question {q.id!r} (answer {label}): {stopped}")
            for q, _, label in calls[len(out):]]
    return out, stopped


def _program_outcome(outcome: Outcome, spec: str, question: Question, label: str,
                     scale: tuple[int, ...]) -> tuple[str, int | None, str | None]:
    """(status, score, error) of one call as the contained child reported it (arms.contained.Outcome)."""
    if outcome.kind == "raised":
        return "error", None, (f"gold program {spec} raised {_shown(outcome.value, str)} on question {question.id!r} "
                               f"(answer {label})")
    got = outcome.value
    if outcome.kind == "value" and got is None:
        return "undecided", None, None
    if outcome.kind != "value" or type(got) is not int or got not in scale:
        said = _shown(got, str if outcome.kind == "other" else repr)
        return "error", None, (f"gold program {spec} returned {said} on question {question.id!r} (answer {label}): "
                               f"not a score on the rubric's scale {list(scale)}, nor None")
    return "scored", got, None


def _shown(value: object, how: Callable[[object], str]) -> str:
    """What the program gave, as text for its error: whatever it is (an int too long to print, an object whose repr
    raises, text with lone surrogates), never an exception of its own."""
    try:
        text = how(value)
    except Exception:  # noqa: BLE001 - user code's __repr__/__str__, or an int past str()'s digit limit
        text = f"a {type(value).__name__} that cannot be shown"
    return shown(text if len(text) <= 200 else text[:197] + "...")


def check_program(exp: Experiment, registered: list[Question], scale: tuple[int, ...]) -> None:
    """Before the first model call: the gold program imports and takes (question, reference, answer), and scoring
    one reference answer (the first registered question that has one) neither exits, crashes nor runs past
    `[gold] timeout_s`: bad input naming prereg.toml's `program`, the question and what happened."""
    if _program_file(exp) is None:
        return
    q = next((q for q in registered if q.reference is not None), registered[0])
    _, stopped = program_scores(exp, [(q, q.reference or "", "the reference")], scale)
    if stopped:
        raise at_key(exp.dir, f"{stopped}, checked before the first model call: a gold program returns a score or "
                          "None, and never ends or hangs the process it runs in", "program")
