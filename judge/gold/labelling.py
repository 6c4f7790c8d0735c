"""`python -m judge label RUN`: a person scores a run's answers blind, in a terminal, exactly as the judge saw them.

Each answer is shown as the judge read it: its blinded label and the judge's prompt rendered from the rubric (the
rubric's scale and guidance, the question, the reference, the answer as normalised and scrubbed), after the rubric's
system text; never its arm, model, quant or judge. The person types a score on the rubric's scale (anything else is
asked again) and an optional note; each label is appended at once to `labels/<labeller>.jsonl` as a `label` record
(core.records.HumanLabel) with the time it was given, hash-chained by core.jsonl.link like the amendments, so the
file is what the blind review page downloads and judge.gold.labels checks. Ctrl-C stops at any prompt; the same command
resumes, asking only what this labeller has not labelled (a label cut off mid-write is dropped, as the raw files'
writers drop one, and asked again). One session per labeller at a time (the file is locked while it runs).

Which answers, in what order:

* default: every single answer of the run, in the blinded order the judge was handed them;
* ``--sample N [--seed S]``: N questions drawn at random (judge.numbers.stats.ppi.label_sample over the run's question
  ids, seed S, by default the experiment's registered seed), recorded in `labels/_samples.jsonl` before the first is
  shown, and EVERY answer to each of them (every arm, quant and sample), shuffled together by the seed: the gold
  differences are paired and the labelled questions are a random sample (judge.gold.sources: design ``random_sample``).
  Before the first label, what the draw buys is printed: the gold-corrected decision's power with it
  (judge.gold.label_power).

``--import FILE`` takes labels made elsewhere, checked against the run before any is kept: a labels file downloaded
from the blind review page (`judge view --blind`; checked by judge.gold.labels: this run's labels key, its blinded
labels, the rubric's scale, the chain intact), or a CSV (UTF-8, a header row; columns `label` and `score`, optional
`note`, `labeller` and `time`; a row without a labeller takes `--labeller`; a row without a time takes the time of
the import; read by the csv module, so a quoted field keeps any line break it holds and U+2028 ends no row). Every
label is appended to its labeller's chain with its own score, note and time; one already there with the same score,
note and time is skipped (an import can be repeated), another is refused. A label not of this
run, a score off the scale, a bad time: exit 2 naming the file, the line and the field.
"""
from __future__ import annotations

import csv
import datetime as dt
import fcntl
import io
import os
import random
import re
import select
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TextIO

from core import jsonl
from core.errors import BadInput
from core.records import HumanLabel, LabelSample
from core.tables import csv_rows
from core.text import decode
from registration.rubric import load_rubric, rubric_dir

from ..judging.blinding import BlindItem
from ..numbers.stats.ppi import label_sample
from ..results.files import Folder, load, utc
from .label_power import sample_power
from .labels import LABELS_DIR, SAMPLES, labeller_file, numbered_labels, read_labels, read_samples, run_key

CSV_COLUMNS = ("label", "score", "note", "labeller", "time")  # label and score required


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def printable(text: str) -> str:
    """Text safe to print to a terminal: control characters other than line feed and tab are shown as escapes, so an
    answer cannot move the cursor, clear the screen or hide text from the person reading it."""
    return "".join(c if c in "\n\t" or c.isprintable() else
                   (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}") for c in text)


@dataclass(frozen=True)
class Chain:
    """A labeller's labels file as it stands: the labels each labeller in it gave (label -> (line, record)), and the
    link the next record chains to."""

    path: Path
    given: dict[tuple[str, str], tuple[int, HumanLabel]]  # (labeller, label) -> (line, label)
    prev: str


def read_chain(path: Path, key: str, labels: set[str], scale: tuple[int, ...]) -> Chain:
    """A labeller's file, checked like any labels file; a cut-off last line is skipped (the appender drops it)."""
    given: dict[tuple[str, str], tuple[int, HumanLabel]] = {}
    prev = key
    if path.is_file():
        for no, lab in numbered_labels(path, key, labels, scale, cut_off_ok=True):
            given[(lab.labeller, lab.label)] = (no, lab)
        last = None
        for _, rec in jsonl.read(path):
            last = rec
        prev = jsonl.link(last) if last is not None else key
    return Chain(path, given, prev)


@contextmanager
def held(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on a labeller's file for the block: a second session of the same labeller is refused at
    once (two writers would break the chain)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BadInput(path, "another `judge label` session is writing this labeller's labels; finish it first, "
                           "or label under another name") from None
        yield
    finally:
        os.close(fd)


def _append(chain: Chain, labels: list[HumanLabel]) -> Chain:
    """Append labels to the chain (their `prev` set here), durably, one line each."""
    prev = chain.prev
    with jsonl.Appender(chain.path) as w:
        for lab in labels:
            rec = HumanLabel(lab.run_key, lab.label, lab.score, lab.note, lab.labeller, lab.time, prev).to_dict()
            w.write(rec)
            prev = jsonl.link(rec)
    return Chain(chain.path, chain.given, prev)


def _rubric_text(d: Folder):
    name = d.run.judge.rubric or d.exp.rubric
    return load_rubric(name, rubric_dir(name, d.exp.dir))


def _sampled(d: Folder, labeller: str, n: int, seed: int) -> list[BlindItem]:
    """The answers to N questions drawn at random, shuffled by the seed; the draw is recorded first (once)."""
    population = list(d.questions)
    if not 1 <= n <= len(population):
        raise BadInput("--sample", f"must be between 1 and the run's {len(population)} questions, got {n}")
    if seed < 0:
        raise BadInput("--seed", f"must be 0 or more (numpy draws from no negative seed), got {seed}")
    picked = label_sample(population, n, seed)
    drawn = read_samples(d.run_dir)
    if not any((s.labeller, s.seed, s.n, s.population, s.picked) == (labeller, seed, n, population, picked)
               for s in drawn):
        with jsonl.Appender(d.run_dir / LABELS_DIR / SAMPLES) as w:
            w.write(LabelSample(labeller, seed, n, population, picked, now()).to_dict())
    chosen = sorted((i for i in d.items if i.question_id in set(picked)), key=lambda i: i.label)
    random.Random(seed).shuffle(chosen)
    return chosen


def _waited(fds: list[int]) -> list[int]:
    """The fds ready to read, waiting as long as it takes. A Python function of its own: entering it runs any signal
    handler still pending, so a Ctrl-C that came before the wait is raised here rather than slept through."""
    return select.select(fds, [], [])[0]


def typed(prompt: str, fd: int | None = None) -> str:
    """input() that never misses a Ctrl-C. input() writes the prompt and then reads the terminal; a Ctrl-C that comes
    between the two (the process descheduled right after the prompt, on a busy machine) runs Python's signal handler
    before the read begins, so the read is never interrupted and the KeyboardInterrupt waits for the next line typed.
    Here every signal also writes to a pipe (signal.set_wakeup_fd, set before the prompt is written) that the wait
    watches beside the terminal, so the handler always runs and raises at once. A line is read from the terminal in
    canonical mode (one line per read); not a terminal, no file descriptor, or not the main thread: input(). A Ctrl-C
    the process was started ignoring (a background job of a script, nohup) is answered while it reads."""
    try:
        fd = sys.stdin.fileno() if fd is None else fd
    except (AttributeError, OSError, ValueError):  # no standard input, or one replaced by an object with no fd
        return input(prompt)
    if not os.isatty(fd) or threading.current_thread() is not threading.main_thread():
        return input(prompt)
    handler = signal.getsignal(signal.SIGINT)
    if handler in (signal.SIG_IGN, signal.SIG_DFL, None):
        # Ctrl-C ignored since the process started (a shell's background job, nohup, a parent that ignores it):
        # Python then installs no handler, and a person at this terminal could not stop. While it reads, it can.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    wake, woken = os.pipe()
    os.set_blocking(wake, False)
    os.set_blocking(woken, False)
    before = signal.set_wakeup_fd(woken, warn_on_full_buffer=False)
    try:
        sys.stdout.write(prompt)
        sys.stdout.flush()
        line = b""
        while not line.endswith(b"\n"):
            if wake in _waited([fd, wake]):
                os.read(wake, 512)  # a signal came: its handler runs as the loop goes round (Ctrl-C raises)
                continue
            chunk = os.read(fd, 4096)
            if not chunk:  # Ctrl-D: at the start of a line it ends the input, as for input()
                if not line:
                    raise EOFError
                break
            line += chunk
    finally:
        signal.set_wakeup_fd(before)
        os.close(wake)
        os.close(woken)
        if handler in (signal.SIG_IGN, signal.SIG_DFL, None):
            signal.signal(signal.SIGINT, handler if handler is not None else signal.SIG_DFL)
    return line.decode(sys.stdin.encoding or "utf-8", "replace").removesuffix("\n")


def _score(text: str, scale: tuple[int, ...]) -> int | None:
    text = text.strip()
    return int(text) if re.fullmatch(r"-?\d+", text) and int(text) in scale else None


def label(run_dir: Path, labeller: str | None = None, sample: int | None = None, seed: int | None = None,
          exp_dir: Path | None = None, ask: Callable[[str], str] = typed, out: TextIO = sys.stdout) -> int:
    """The terminal session: 0 when every answer asked for is labelled, 130 when stopped (Ctrl-C, end of input)."""
    d = load(run_dir, exp_dir)
    if not d.items:
        raise BadInput(d.run_dir / "blinding.jsonl", "holds no blinding key of a single answer (a pairwise-only "
                       "run, or every answer failed): there is nothing to label")
    rubric = _rubric_text(d)
    scale = d.scale
    key = run_key(d.label_key)

    def say(text: str = "") -> None:
        print(text, file=out, flush=True)

    try:
        while not (labeller or "").strip():
            labeller = ask("Your name (labeller): ")
        labeller = labeller.strip()
        path = labeller_file(d.run_dir, labeller)
        with held(path):
            dropped = jsonl.repair_tail(path)
            if dropped:
                say(f"{path.relative_to(d.run_dir)}: dropped a label cut off while it was written ({dropped} bytes); "
                    "its answer is asked again")
            chain = read_chain(path, key, {i.label for i in d.items}, scale)
            queue = _sampled(d, labeller, sample, d.exp.seed if seed is None else seed) if sample else list(d.items)
            todo = [i for i in queue if (labeller, i.label) not in chain.given]
            where = path.relative_to(d.run_dir)
            say(f"Labelling as {labeller}: {len(queue)} answers, {len(queue) - len(todo)} already labelled, "
                f"{len(todo)} to go. Labels are saved one by one to {where}; Ctrl-C stops, the same command resumes.")
            for line in sample_power(d, {i.question_id for i in queue}) if sample else []:
                say(line)
            if not todo:
                say(f"Nothing left to label: every answer asked for has a label by {labeller} in {where}.")
                return 0
            say(f"\nThe judge's instructions (rubric {rubric.name!r}):\n{printable(rubric.system)}")
            scale_text = ", ".join(map(str, scale))
            for n, item in enumerate(todo, start=len(queue) - len(todo) + 1):
                say(f"\n{'=' * 72}\n[{n}/{len(queue)}] answer {item.label}\n{'-' * 72}")
                shown = printable(rubric.render(**item.prompt_fields()))  # the judge's prompt, byte for byte
                say(f"{shown}{'' if shown.endswith(chr(10)) else chr(10)}{'-' * 72}")
                score = None
                while score is None:
                    typed = ask(f"Score ({scale_text}): ")
                    score = _score(typed, scale)
                    if score is None:
                        say(f"{typed.strip()!r} is not a score on the rubric's scale; type one of {scale_text}.")
                note = ask("Note (optional, Enter for none): ").strip()
                chain = _append(chain, [HumanLabel(key, item.label, score, note, labeller, now(), "")])
                say(f"saved: {item.label} = {score}")
            say(f"\nDone: all {len(queue)} answers labelled by {labeller} in {where}.")
            return 0
    except (KeyboardInterrupt, EOFError):
        say("\nstopped: every label entered so far is saved; run the same command to resume.")
        return 130


@dataclass(frozen=True)
class Incoming:
    """One label of a file being imported, with its line there."""

    line: int
    label: str
    score: int
    note: str
    labeller: str
    time: str


def _from_jsonl(path: Path, d: Folder, labeller: str | None) -> list[Incoming]:
    if labeller is not None:
        raise BadInput("--labeller", "a labels.jsonl names who gave each label; --labeller is for a CSV without a "
                       "labeller column")
    labels = numbered_labels(path, run_key(d.label_key), {i.label for i in d.items}, d.scale)
    return [Incoming(no, x.label, x.score, x.note, x.labeller, x.time) for no, x in labels]


def _from_csv(path: Path, d: Folder, labeller: str | None) -> list[Incoming]:
    return csv_labels(path, {i.label for i in d.items}, d.scale, labeller)


def csv_labels(path: Path, labels: set[str], scale: tuple[int, ...], labeller: str | None) -> list[Incoming]:
    """A CSV of labels of a run (its blinded `labels`, its rubric's `scale`): a header row naming CSV_COLUMNS (label
    and score required), one label per row. Read as CSV, never split into lines first: a quoted field keeps any line
    separator it holds (CR, LF, U+2028, ...), and a row ends only at a CR or LF outside quotes. Decoded as every input
    is (core.text: strict UTF-8, a leading byte-order mark dropped). Each cell is taken without its surrounding
    spaces, except the note, which is kept exactly as written."""
    text = decode(path.read_bytes(), path)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise BadInput(path, "is empty: a header row (label,score,note,labeller,time) and one row per label") from None
    except csv.Error as e:
        raise BadInput(path, f"not a CSV file: {e}", line=1) from None
    for name in header:
        if name not in CSV_COLUMNS:
            raise BadInput(path, f"unknown column {name!r}; the columns are {', '.join(CSV_COLUMNS)}", line=1,
                           field=name)
        if header.count(name) > 1:
            raise BadInput(path, f"column {name!r} appears twice", line=1, field=name)
    for name in ("label", "score"):
        if name not in header:
            raise BadInput(path, "missing column: every row needs a label and a score", line=1, field=name)
    stamp = now()
    out: list[Incoming] = []
    seen: dict[tuple[str, str], int] = {}
    for line, row in csv_rows(reader, path, "not a CSV row"):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise BadInput(path, f"has {len(row)} cells, the header {len(header)}", line=line)
        cell = {h: v if h == "note" else v.strip() for h, v in zip(header, row, strict=True)}
        if cell["label"] not in labels:
            raise BadInput(path, f"{cell['label']!r} is not a blinded label of a single answer of this run", line=line,
                           field="label")
        score = _score(cell["score"], scale)
        if score is None:
            raise BadInput(path, f"{cell['score']!r} is not a score on the rubric's scale {list(scale)}", line=line,
                           field="score")
        who = cell.get("labeller") or labeller or ""
        if not who.strip():
            raise BadInput(path, "is empty and no --labeller was given: every label names who gave it", line=line,
                           field="labeller")
        time = cell.get("time") or stamp
        try:
            utc(time, path, "time")
        except BadInput as e:
            raise BadInput(path, e.message, line=line, field="time") from None
        first = seen.setdefault((who, cell["label"]), line)
        if first != line:
            raise BadInput(path, f"{who!r} already labelled {cell['label']} at line {first}", line=line, field="label")
        out.append(Incoming(line, cell["label"], score, cell.get("note", ""), who.strip(), time))
    if not out:
        raise BadInput(path, "holds no labels")
    return out


def import_labels(run_dir: Path, file: Path, labeller: str | None = None,
                  exp_dir: Path | None = None) -> dict[Path, tuple[int, int]]:
    """Append the labels of `file` (a labels.jsonl from the blind page, or a CSV) to their labellers' chains, every
    one checked against the run first; labeller file -> (labels added, labels already there)."""
    d = load(run_dir, exp_dir)
    file = Path(file)
    if not file.is_file():
        raise BadInput(file, "labels file not found")
    incoming = (_from_csv if file.suffix.lower() == ".csv" else _from_jsonl)(file, d, labeller)
    key = run_key(d.label_key)
    labels = {i.label for i in d.items}
    by_file: dict[Path, list[Incoming]] = {}
    for x in incoming:
        by_file.setdefault(labeller_file(d.run_dir, x.labeller), []).append(x)
    out: dict[Path, tuple[int, int]] = {}
    with ExitStack() as stack:
        todo = []
        for path, xs in by_file.items():  # every file checked before any label is kept
            stack.enter_context(held(path))
            jsonl.repair_tail(path)
            chain = read_chain(path, key, labels, d.scale)
            new = []
            for x in xs:
                there = chain.given.get((x.labeller, x.label))
                if there is None:
                    new.append(HumanLabel(key, x.label, x.score, x.note, x.labeller, x.time, ""))
                elif (there[1].score, there[1].note, there[1].time) != (x.score, x.note, x.time):
                    raise BadInput(file, f"{x.labeller!r} already labelled {x.label} with score {there[1].score} "
                                   f"({path.relative_to(d.run_dir)} line {there[0]}): one label per labeller per "
                                   "answer", line=x.line, field="label")
            todo.append((chain, new))
            out[path] = (len(new), len(xs) - len(new))
        for chain, new in todo:
            _append(chain, new)
    return out


def check_labels(path: Path, run_dir: Path, exp_dir: Path | None = None) -> list[HumanLabel]:
    """The labels of a labels file, checked against the results folder they were given for."""
    d = load(run_dir, exp_dir)
    return read_labels(path, run_key(d.label_key), {i.label for i in d.items}, d.scale)
