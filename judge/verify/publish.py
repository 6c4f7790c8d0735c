"""`judge publish RESULTS_DIR --out DIR`: a finished results folder written as a bundle (judge.verify.bundle says
what a bundle holds), whole or not at all, into a new folder outside the results and the experiment folders."""
from __future__ import annotations

import json
import os
import shutil
from functools import partial
from pathlib import Path
from typing import Callable

from core import jsonl
from core.errors import BadInput
from core.records import BundleInfo, PublicQuestion, RunInfo
from registration.prereg import Experiment, load_experiment
from registration.questions import load_questions
from registration.seal import AMENDMENTS, MANIFEST, sealed_bytes, verify_seal

from ..gold.labels import LABELS_DIR, SAMPLES
from ..gold.registry import SOURCES
from ..gold.sources import run_gold
from ..outputs.review_md import REVIEW
from ..results.files import ANCHOR_FILES, RETESTS, anchor
from .bundle import BUNDLE, GOLD, PUBLISHED, QUESTIONS, REDACTED, never_published
from .bundle_schemas import write_schemas
from .withheld import Salts, folder_salts, redact_answer, redact_judgment, redact_label, sha256_of, withhold


def _outside(out: Path, folders: dict[str, Path]) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise BadInput(out, "exists: a bundle is written to a new folder (or an empty one), never over files")
    for what, folder in folders.items():
        if out.resolve().is_relative_to(Path(folder).resolve()):
            raise BadInput(out, f"lies inside the {what} {folder}: a bundle is written outside it")


def publish(run_dir: Path, out: Path, exp_dir: Path | None = None) -> Path:
    """Write the bundle of a finished results folder to `out` (a new folder, written whole or not at all)."""
    run_dir, out = Path(run_dir), Path(out)
    for name in (*ANCHOR_FILES, "report.md"):
        if not (run_dir / name).is_file():
            raise BadInput(run_dir / name, "missing: not a finished results folder with an anchor (a folder written "
                           "before results folders were bound has none: a `judge run` into it writes it, repeating "
                           "no model call)")
    run = RunInfo.read_file(run_dir / "run.json")
    if exp_dir is None and run.experiment_dir is None:
        raise BadInput(run_dir / "run.json", "missing: the experiment folder is not recorded; pass it with --exp",
                       field="experiment_dir")
    exp_dir = Path(exp_dir or run.experiment_dir)
    _outside(out, {"results folder": run_dir, "experiment folder": exp_dir})
    manifest = verify_seal(exp_dir)  # exactly as sealed; its private files may be there or withheld already
    private = {rel: sha for rel, (sha, p) in manifest.items() if p}
    if "prereg.toml" in private:
        raise BadInput(exp_dir / "prereg.toml", "is sealed private: a bundle is verified against the registration "
                       "(hypotheses, arms, analysis settings), so it must be public; seal it without --private")
    exp = load_experiment(exp_dir)
    sets = {p.relative_to(exp.dir.resolve()).as_posix(): p for p in exp.set_paths()}
    for rel in (r for r in sets if r in private and not sets[r].is_file()):
        raise BadInput(exp_dir / rel, "is sealed private and not here: `judge publish` reads it to describe the run's "
                       "questions of it (ids, tags, clusters and a commitment to each text, never the text); publish "
                       "where the set is")
    salts = folder_salts(run_dir) if private else None
    wanted = set(run.question_ids)
    questions = [PublicQuestion(q.id, rel, q.line, list(q.tags), q.cluster,
                                salts.commit(f"{QUESTIONS}:{rel}:{q.id}:question", q.question.encode()),
                                None if q.reference is None else
                                salts.commit(f"{QUESTIONS}:{rel}:{q.id}:reference", q.reference.encode()))
                 for rel in sets if rel in private
                 for q in load_questions([sets[rel]], exp.set_formats_by_path()) if q.id in wanted]
    every_row = any(rel not in sets for rel in private)
    private_ids = {q.id for q in questions}
    withheld = (lambda qid: True) if every_row else (lambda qid: qid in private_ids)
    gold = _gold_records(exp, run_dir, salts, withheld) if private else []
    tmp = out.parent / f".{out.name}.partial-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        (tmp / "results").mkdir(parents=True)
        files, rows = {}, {}
        names = [n for n in PUBLISHED if (run_dir / n).is_file()]
        names += sorted(p.relative_to(run_dir).as_posix() for p in (run_dir / "plots").glob("*.png"))
        names += sorted(p.relative_to(run_dir).as_posix() for p in (run_dir / LABELS_DIR).glob("*.jsonl"))
        for name in (n for n in names if not never_published(n)):
            data = (run_dir / name).read_bytes()
            target = tmp / "results" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            labels = name.startswith(f"{LABELS_DIR}/") and not name.endswith(f"/{SAMPLES}")
            if private and (name in REDACTED or labels):
                text, rows[name] = _redacted(run_dir / name, name, data, salts, withheld, exp.analysis.style)
                target.write_bytes(text)
                files[name] = {"sha256": sha256_of(data), "published": "redacted"}
            elif private and name == REVIEW:
                files[name] = {"sha256": sha256_of(data), "published": "withheld"}
            else:
                target.write_bytes(data)
                files[name] = {"sha256": sha256_of(data), "published": "verbatim"}
        for name, recs in ((QUESTIONS, [q.to_dict() for q in questions]), (GOLD, gold)):
            with jsonl.Appender(tmp / name) as w:
                for rec in recs:
                    w.write(rec)
        _copy_experiment(exp_dir, manifest, tmp / "experiment")
        write_schemas(tmp)
        doc = {"type": "bundle", "version": BundleInfo.VERSION, "run": run.name, "experiment": run.experiment,
               "anchor": anchor(run_dir),
               "commitments": "sha256(salt || value), each value's salt HMAC-SHA256(the results folder's "
                              "bundle.secret, its place); never published" if private else "none",
               "files": files, "private": private,
               "rows_withheld": "every row" if every_row else "rows of the private sets' questions" if private else
               "none", "questions_sha256": sha256_of((tmp / QUESTIONS).read_bytes()),
               "gold_sha256": sha256_of((tmp / GOLD).read_bytes()), "rows": rows}
        (tmp / BUNDLE).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        if out.is_dir():
            out.rmdir()
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _gold_records(exp: Experiment, run_dir: Path, salts: Salts, withheld: Callable[[str], bool]) -> list[dict]:
    """What verify cannot compute of the gold on the answers whose text the bundle withholds, computed here where the
    text is (judge.gold.sources.Recorded): the registered gold program's result (label, status, score, its error's
    commitment), and the answer each sealed gold record matched (its "file:line" and the label)."""
    if exp.gold is None:
        return []
    out = []
    for s in run_gold(exp, run_dir).scores:
        if not withheld(s.question_id):
            continue
        kept = SOURCES[s.source].publish(s, lambda value, s=s: withhold(value, salts, f"{GOLD}:{s.label}:error"))
        if kept is not None:
            out.append({"label": s.label, "source": s.source, **kept})
    return out


def _redacted(path: Path, name: str, data: bytes, salts: Salts, withheld: Callable[[str], bool],
              style: tuple[str, ...]) -> tuple[bytes, list[list[str]]]:
    """A raw file or labels file as published (line for line; a partial last line a kill left is not a record and is
    left out) and per line [commitment to the original line, sha256 of the published one]. A raw record is redacted
    when its question's text is withheld, a person's label always (its note may quote the answer)."""
    redact = {"answers.jsonl": partial(redact_answer, style=style), "judgments.jsonl": redact_judgment,
              RETESTS: redact_judgment}.get(name, redact_label)
    out, rows = [], []
    for no, line in enumerate(data.split(b"\n")[:-1], start=1):
        published = line
        if line.strip():
            try:
                rec = jsonl.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as e:
                raise BadInput(path, f"not valid JSON ({e}): a results folder `judge verify` accepts holds none",
                               line=no) from None
            if not isinstance(rec, dict):
                raise BadInput(path, "a record must be a JSON object", line=no)
            if redact is redact_label or withheld(rec.get("question_id")):
                published = jsonl.dumps(redact(rec, salts, f"{name}:{no}")).encode("utf-8")
        out.append(published)
        rows.append([salts.commit(f"{name}:{no}", line), sha256_of(published)])
    return b"".join(x + b"\n" for x in out), rows


def _copy_experiment(exp_dir: Path, manifest: dict[str, tuple[str, bool]], to: Path) -> None:
    """Every sealed file but the private ones, each exactly as sealed, with the MANIFEST and the amendments."""
    for rel, (_, private) in manifest.items():
        if not private:
            target = to / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(sealed_bytes(exp_dir, Path(exp_dir) / rel))
    to.mkdir(parents=True, exist_ok=True)
    for name in (MANIFEST, AMENDMENTS):
        if (Path(exp_dir) / name).is_file():
            shutil.copyfile(Path(exp_dir) / name, to / name)
