"""A careful forger's tools: raw records read and rewritten, then numbers.json, review.md and report.md recomputed
with the product's own code, so that only verify's re-derivation from the rawest evidence can tell."""
from __future__ import annotations

import json
from pathlib import Path

from arms.folder import blinding_secret, read_binding
from core import jsonl
from core.records import RunInfo
from judge.gold.sources import run_gold
from judge.judging.blinding import folder_label_secret
from judge.numbers.analysis import compute_numbers, write_numbers
from judge.outputs.report import folder_report
from judge.outputs.review_md import write_review
from registration.prereg import load_experiment
from registration.questions import load_questions


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def rewrite(path: Path, recs: list[dict]) -> None:
    Path(path).write_text("".join(jsonl.dumps(r) + "\n" for r in recs))


def reanalyse(out: Path) -> dict:
    """Recompute numbers.json and report.md from the raw files, as a careful forger would after editing them."""
    run = json.loads((out / "run.json").read_text())
    e = load_experiment(run["experiment_dir"])
    numbers = compute_numbers(e, load_questions(e.set_paths()), out, RunInfo.from_dict(run, "run.json"),
                              run_gold(e, out))
    write_numbers(numbers, out / "numbers.json")
    write_review(out, e.dir)
    (out / "report.md").write_text(folder_report(out))
    return numbers.to_dict()


def label_key(out: Path) -> bytes:
    """The key the folder's labels derive from: a forger holding the folder holds its blinding secret too."""
    doc = read_binding(out)
    return folder_label_secret(blinding_secret(out, doc), doc.label_key)
