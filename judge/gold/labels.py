"""Labels files: the scores a person gave blinded answers in review.html's blind mode (`judge view --blind`).

One `HumanLabel` record per line (core.records), hash-chained like amendments.jsonl by the one chaining rule,
core.jsonl.link: the first record's `prev` is the run's labels key, each next record's the link of the record
before it, so a label edited, inserted, dropped or moved to another run after download is seen. `read_labels`
is the one reader: every label must be a blinded label of this run, every score on its rubric's scale, the chain
intact; anything else is bad input naming the file, the line and the field (exit 2).

A results folder keeps the labels people give it in `labels/` (judge.gold.labelling writes them, judge.gold.sources
reads them): one chained file per labeller, `labels/<labeller>.jsonl` (a labeller's labels in any other file are
refused: `people_labels`), and `labels/_samples.jsonl`, the seeded random samples of
questions drawn for labelling (core.records.LabelSample).
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

from core import jsonl, text
from core.errors import BadInput
from core.records import HumanLabel, LabelSample

from ..results.files import utc


def check_score_labeller_time(label, scale, path: Path, no: int, who: str) -> None:
    """A label's score on the rubric's scale, a labeller named (`who` says why), a UTC time: shared by the labels
    people give (labels/*.jsonl) and the registered gold labels files (judge.gold.sources)."""
    if label.score not in scale:
        raise BadInput(path, f"{label.score!r} is not on the rubric's scale {list(scale)}", line=no, field="score")
    if not label.labeller.strip():
        raise BadInput(path, f"is empty: {who}", line=no, field="labeller")
    try:
        utc(label.time, path, "time")
    except BadInput as e:
        raise BadInput(path, e.message, line=no, field="time") from None


def run_key(label_key: str) -> str:
    """What a labels file names its run by: a hash of the run's label key, never the key itself, which derives
    every label (judge.judging.blinding.label_secret): a blind page holding it could be un-blinded."""
    return hashlib.sha256(f"labels\x1f{label_key}".encode()).hexdigest()


LABELS_DIR = "labels"  # in a results folder
SAMPLES = "_samples.jsonl"  # in LABELS_DIR: no labeller's file starts with "_"


def labeller_file(run_dir: Path, labeller: str) -> Path:
    """Where a labeller's labels of a run are kept: `labels/<name>.jsonl`, the name made safe as a file name (letters,
    digits, `.`, `-`, `_` kept; anything else `-`; never starting with `_` or `.`)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "-", labeller.strip()).lstrip("._") or "-"
    return Path(run_dir) / LABELS_DIR / f"{name}.jsonl"


def labeller_files(run_dir: Path) -> list[Path]:
    """Every labeller's labels file of a run, by name."""
    folder = Path(run_dir) / LABELS_DIR
    return sorted(p for p in folder.glob("*.jsonl") if not p.name.startswith("_")) if folder.is_dir() else []


def read_samples(run_dir: Path) -> list[LabelSample]:
    """The random samples drawn for labelling a run, in the order they were drawn."""
    return [s for _, s in numbered_samples(run_dir)]


def numbered_samples(run_dir: Path) -> list[tuple[int, LabelSample]]:
    """`read_samples` with each sample's line."""
    path = Path(run_dir) / LABELS_DIR / SAMPLES
    return [(no, LabelSample.from_dict(rec, path, no)) for no, rec in jsonl.read(path)]


def people_labels(run_dir: Path, key: str, labels: frozenset[str] | set[str],
                  scale: tuple[int, ...]) -> list[tuple[str, int, HumanLabel]]:
    """Every label people gave a run (labels/<labeller>.jsonl), as (file relative to the run, line, label). One
    chain per labeller: a label whose labeller keeps their chain in another file (`labeller_file`) is bad input
    naming both files, so a chain copied or renamed beside the original never counts its labeller twice."""
    out = []
    for path in labeller_files(run_dir):
        rel = path.relative_to(run_dir).as_posix()
        for no, lab in numbered_labels(path, key, labels, scale, cut_off_ok=True):
            own = labeller_file(run_dir, lab.labeller)
            if own != path:
                there = " (which is there too)" if own.is_file() else ""
                raise BadInput(path, f"holds a label by {lab.labeller!r}, whose one chain of this run is "
                               f"{own.relative_to(run_dir).as_posix()}{there}, not {rel}: a labels file copied or "
                               "renamed would count the same labeller twice; keep one file per labeller, named by "
                               "`judge label`", line=no, field="labeller")
            out.append((rel, no, lab))
    return out


def read_labels(path: Path, key: str, labels: frozenset[str] | set[str], scale: tuple[int, ...]) -> list[HumanLabel]:
    """The labels of a labels file, checked against a run: its labels key `key`, its blinded `labels`, its
    rubric `scale`. One label per (labeller, answer)."""
    return [lab for _, lab in numbered_labels(path, key, labels, scale)]


def numbered_labels(path: Path, key: str, labels: frozenset[str] | set[str], scale: tuple[int, ...],
                    cut_off_ok: bool = False, sealed: bool = False) -> list[tuple[int, HumanLabel]]:
    """`read_labels` with each label's line. `cut_off_ok`: a results folder's own labels file (labels/), appended to
    by `judge label`: a last line without its line end is a label being written when it was stopped (dropped when it
    resumes), skipped as the raw files' readers skip one, and a file with no label is empty, not bad. Otherwise the
    file was handed to us, and is read as every input is (core.jsonl.read_sealed: strict UTF-8, a leading byte-order
    mark dropped, a lone surrogate refused naming its field) and a file with no label is refused; a download whose
    last line has no line end is refused as cut off, a `sealed` file (a registered gold source, finished when it was
    sealed) is read whole."""
    path = Path(path)
    if not path.is_file():
        raise BadInput(path, "labels file not found")
    data = path.read_bytes()
    if data and not data.endswith(b"\n") and not cut_off_ok and not sealed:
        raise BadInput(path, "the last line has no line end: the file was cut off (download it again)",
                       line=data.count(b"\n") + 1)
    out: list[tuple[int, HumanLabel]] = []
    seen: dict[tuple[str, str], int] = {}
    prev = key
    for no, rec in jsonl.read(path) if cut_off_ok else jsonl.read_sealed(path):
        lab = HumanLabel.from_dict(rec, path, no)
        if lab.run_key != key:
            raise BadInput(path, f"reads {lab.run_key[:16]}…, but this run's labels key is {key[:16]}…: these are "
                           "labels of another run", line=no, field="run_key")
        if lab.label not in labels:
            raise BadInput(path, f"{lab.label!r} is not a blinded label of a single answer of this run", line=no,
                           field="label")
        check_score_labeller_time(lab, scale, path, no, "every label names who gave it")
        first = seen.setdefault((lab.labeller, lab.label), no)
        if first != no:
            raise BadInput(path, f"{lab.labeller!r} already labelled {lab.label} at line {first}", line=no,
                           field="label")
        if lab.prev != prev:
            raise BadInput(path, "hash chain broken: a label was edited, inserted, removed or reordered", line=no,
                           field="prev")
        try:
            prev = jsonl.link(rec)
        except UnicodeEncodeError:
            raise BadInput(path, "holds text that is not valid Unicode (a lone surrogate)", line=no,
                           field=text.lone_surrogate(rec) or None) from None
        out.append((no, lab))
    if not out and not cut_off_ok:
        raise BadInput(path, "holds no labels")
    return out
