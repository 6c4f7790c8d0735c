"""`python -m judge export RUN --format csv|parquet`: a run as one tidy table, to recompute without our code.

One row per answer and judge of single-answer grading (each key's current record under the retry
rule): question, cluster, arm, quant, sample, the answer's text, judge, blinded label, the verdict's
status and score, and the sha256 of the raw judge reply the verdict came from. An answer whose model
call failed has one row with status `answer error`; an answer no judge has a verdict for yet has one
row with status `not judged`. Pairwise verdicts compare two answers and are not in the table.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd

from arms.errors import BadInput
from arms.questions import load_questions
from registration.prereg import load_experiment

from .analysis import RAW_FILES, load_raw

COLUMNS = ("question", "cluster", "arm", "quant", "sample", "answer", "judge", "label", "status", "score",
           "raw_sha256")
FORMATS = ("csv", "parquet")


def table(run_dir: Path, exp_dir: Path | None = None) -> pd.DataFrame:
    run_dir = Path(run_dir)
    for name in ("run.json", *RAW_FILES):
        if not (run_dir / name).is_file():
            raise BadInput(run_dir / name, "missing: not a results folder of `judge run`")
    try:
        run = json.loads((run_dir / "run.json").read_text())
        arms, qids = run["arms"], run["question_ids"]
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BadInput(run_dir / "run.json", f"not valid JSON: {e}") from None
    except (KeyError, TypeError) as e:
        raise BadInput(run_dir / "run.json", "missing: not written by `judge run`", field=str(e).strip("'")) from None
    exp = load_experiment(Path(exp_dir or run["experiment_dir"]))
    clusters = {q.id: q.cluster or q.id for q in load_questions(exp.set_paths())}
    raw = load_raw(run_dir)
    by_row = {k.row: k.label for k in raw.keys}
    verdicts: dict[str, list] = {}
    for j in raw.judgments:
        if j.kind == "single":
            verdicts.setdefault(j.label, []).append(j)
    order = {q: i for i, q in enumerate(qids)}
    arm_order = {a: i for i, a in enumerate(arms)}
    answers = sorted((a for a in raw.answers if a.arm in arm_order and a.question_id in order),
                     key=lambda a: (order[a.question_id], arm_order[a.arm], a.quant, a.sample))
    rows = []
    for a in answers:
        base = {"question": a.question_id, "cluster": clusters.get(a.question_id, a.question_id), "arm": a.arm,
                "quant": a.quant, "sample": a.sample, "answer": a.text}
        label = by_row.get(a.row)
        judged = sorted(verdicts.get(label, []), key=lambda j: j.judge)
        if a.status != "ok" or not judged:
            rows.append({**base, "judge": None, "label": label, "score": None, "raw_sha256": None,
                         "status": "answer error" if a.status != "ok" else "not judged"})
        for j in judged:
            last = j.attempts[-1].get("raw") if j.attempts else None
            rows.append({**base, "judge": j.judge, "label": label, "status": j.status, "score": j.score,
                         "raw_sha256": hashlib.sha256(last.encode()).hexdigest() if last is not None else None})
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    df["sample"] = df["sample"].astype("int64")
    df["score"] = df["score"].astype("Int64")  # nullable: an unscored verdict has no score, never a zero
    return df


def export(run_dir: Path, fmt: str, out: Path | None = None, exp_dir: Path | None = None) -> Path:
    """Write the table as `out` (default RUN/export.<fmt>) and return its path."""
    df = table(run_dir, exp_dir)
    out = Path(out) if out else Path(run_dir) / f"export.{fmt}"
    if fmt == "csv":
        df.to_csv(out, index=False)
    else:
        df.to_parquet(out, index=False)
    return out
