"""`python -m judge export RUN --format csv|parquet`: a run as one tidy table, to recompute without our code.

One row per answer and judge of single-answer grading (each key's current record under the retry
rule): question, cluster, arm, quant, sample, the answer's text, judge, blinded label, the verdict's
status and score, the sha256 of the raw judge reply the verdict came from, and the answer's gold (judge.gold.sources):
`gold` the mean of its gold scores (empty where it has none), `gold_scores` how many there are (program, sealed
labels and people's labels each count), `gold_design` how they were chosen (complete_strata, random_sample,
convenience; several joined by "+"). An answer whose model
call failed has one row with status `answer error`; an answer no judge has a verdict for yet has one
row with status `not judged`. Pairwise verdicts compare two answers and are not in the table.

The table is written outside the results folder (an export beside the raw evidence could overwrite it), and
atomically, so a path that is a hard link to a raw file replaces the link, never the file's content. CSV is
RFC 4180: CRLF between rows, and every field holding a comma, a quote, a CR or an LF quoted, so no text inside an
answer can split a row. Spreadsheets run a cell that begins with =, +, -, @, a tab or a CR as a formula (CSV
injection), so such text cells are written with one ' in front (OWASP's rule), as is a text cell that already
begins with ': spreadsheets show the text as it was, and a program gets it back by dropping one leading ' from
every text cell that begins with one. Numbers stay numbers; Parquet holds every text as it is.
"""
from __future__ import annotations

import csv
import hashlib
from pathlib import Path

import pandas as pd

from core.atomic import replacing
from core.errors import BadInput
from core.records import RunInfo
from registration.prereg import load_experiment
from registration.questions import load_questions

from ..gold.sources import run_gold
from ..results.files import RAW_FILES, RUN, load_raw

COLUMNS = ("question", "cluster", "arm", "quant", "sample", "answer", "judge", "label", "status", "score",
           "raw_sha256", "gold", "gold_scores", "gold_design")
FORMATS = ("csv", "parquet")
FORMULA_LEAD = ("=", "+", "-", "@", "\t", "\r")  # OWASP's CSV-injection characters


def table(run_dir: Path, exp_dir: Path | None = None) -> pd.DataFrame:
    run_dir = Path(run_dir)
    for name in (RUN, *RAW_FILES):
        if not (run_dir / name).is_file():
            raise BadInput(run_dir / name, "missing: not a results folder of `judge run`")
    run = RunInfo.read_file(run_dir / RUN)
    arms, qids = run.arms, run.question_ids
    if exp_dir is None and run.experiment_dir is None:
        raise BadInput(run_dir / RUN, "missing: the experiment folder is not recorded; pass it with --exp",
                       field="experiment_dir")
    exp = load_experiment(Path(exp_dir or run.experiment_dir))
    clusters = {q.id: q.cluster or q.id for q in load_questions(exp.set_paths(), exp.set_formats_by_path())}
    raw = load_raw(run_dir)
    by_row = {k.row: k.label for k in raw.keys}
    verdicts: dict[str, list] = {}
    for j in raw.judgments:
        if j.kind == "single":
            verdicts.setdefault(j.label, []).append(j)
    gold = run_gold(exp, run_dir)
    golden: dict[str, list] = {}
    for g in gold.scored if gold else ():
        golden.setdefault(g.label, []).append(g)
    order = {q: i for i, q in enumerate(qids)}
    arm_order = {a: i for i, a in enumerate(arms)}
    answers = sorted((a for a in raw.answers if a.arm in arm_order and a.question_id in order),
                     key=lambda a: (order[a.question_id], arm_order[a.arm], a.quant, a.sample))
    rows = []
    for a in answers:
        base = {"question": a.question_id, "cluster": clusters.get(a.question_id, a.question_id), "arm": a.arm,
                "quant": a.quant, "sample": a.sample, "answer": a.text}
        label = by_row.get(a.row)
        mine = golden.get(label, [])
        base |= {"gold": sum(g.score for g in mine) / len(mine) if mine else None, "gold_scores": len(mine),
                 "gold_design": "+".join(sorted({g.design for g in mine})) or None}
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
    df["gold"] = df["gold"].astype("Float64")
    df["gold_scores"] = df["gold_scores"].astype("int64")
    return df


def spreadsheet_safe(df: pd.DataFrame) -> pd.DataFrame:
    """The table with each text cell a spreadsheet would run as a formula (or that begins with ') given one ' in
    front; numbers, and cells that are not text, unchanged."""
    lead = (*FORMULA_LEAD, "'")
    out = df.copy()
    for name in df.columns:
        if not pd.api.types.is_numeric_dtype(df[name].dtype):
            out[name] = df[name].map(lambda v: f"'{v}" if isinstance(v, str) and v.startswith(lead) else v)
    return out


def write_csv(df: pd.DataFrame, out: Path) -> None:
    """RFC 4180 CSV, formula-leading text neutralised, written atomically."""
    with replacing(out) as tmp:
        spreadsheet_safe(df).to_csv(tmp, index=False, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL,
                                    encoding="utf-8")


def default_out(run_dir: Path, fmt: str) -> Path:
    """Beside the results folder, never in it: results/demo -> results/demo.export.csv."""
    folder = Path(run_dir).resolve()
    return folder.with_name(f"{folder.name}.export.{fmt}")


def check_out(run_dir: Path, out: Path) -> None:
    """Refuse an output path inside the results folder (symbolic links resolved): it could overwrite raw evidence."""
    folder, target = Path(run_dir).resolve(), Path(out).resolve()
    if target == folder or target.is_relative_to(folder):
        raise BadInput(out, f"is inside the results folder {folder}: an export is written outside it, never among "
                       "the raw files it could overwrite; name a path outside it with --out", field="--out")
    if target.is_dir():
        raise BadInput(out, "is a folder: --out names the file to write", field="--out")


def export(run_dir: Path, fmt: str, out: Path | None = None, exp_dir: Path | None = None) -> Path:
    """Write the table as `out` (default beside the folder, `RUN.export.<fmt>`) and return its path."""
    out = Path(out) if out else default_out(run_dir, fmt)
    check_out(run_dir, out)
    df = table(run_dir, exp_dir)
    if fmt == "csv":
        write_csv(df, out)
    else:
        with replacing(out) as tmp:
            df.to_parquet(tmp, index=False)
    return out
