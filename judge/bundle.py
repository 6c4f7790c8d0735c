"""A bundle a team can publish: `judge publish RESULTS_DIR --out DIR`, and `judge verify DIR` on it.

An experiment may seal files private (`judge seal --private`): bound by sha256 in its MANIFEST, kept out of the
repository. Its results folder still holds their text: the answers that repeat a question, the judge replies and
rationales that quote its reference. A bundle is what a team can put in public, and enough to recompute every number:

  BUNDLE.json      the run, the original folder's anchor, each file's original sha256 and how it is published
                   (`verbatim`, `redacted` or `withheld`), the private files (MANIFEST names and sha256), which rows
                   derive from them, and per line of a redacted file the sha256 of the original line and of the
                   published one
  questions.jsonl  the run's questions of the private sets, without their text (core.records.PublicQuestion)
  results/         binding.json, run.json, blinding.jsonl, numbers.json, report.md, the plots and batches.jsonl as
                   written; answers.jsonl and judgments.jsonl with every value of a row derived from a private file
                   withheld, but those the numbers read (scores, statuses, labels, counts, tokens, call keys)
  experiment/      the sealed experiment folder without its private files: MANIFEST (which binds them by sha256),
                   amendments.jsonl and every other file it seals

A withheld value is replaced by {"withheld": sha256}: of its UTF-8 text, or (with "json": true) of its canonical
JSON; an answer's text keeps its number of words too ("words"), the one thing the numbers read of it. The rows
derived from private files are those of the private sets' questions when every private file is a question set,
and every row otherwise (a private knowledge base or glue can be in any answer). review.md, which quotes them, is
withheld; invocations.jsonl, labels/ and repaired.jsonl are not evidence of the run and are left out.

How a bundle is tied to the anchor. The anchor hashes six files: four are published byte for byte, and of the two
redacted ones (answers.jsonl, judgments.jsonl) BUNDLE.json states the original sha256, which numbers.json (one of
the four) records too. verify recomputes the anchor from them and prints it: it must be the one recorded when the
run finished. Each redacted line carries, in BUNDLE.json, the sha256 of the original line: the published row with
its withheld values put back is the original record, whose canonical JSON (core.jsonl.dumps) is that line, so anyone
later given those values (or the original files) can check each row, and the files against the anchor.

`judge verify DIR` on a bundle checks every published file against BUNDLE.json (an edited row is named), the seal of
experiment/ and the chain from its MANIFEST through binding.json and run.json to the anchor, the scope complete,
each blinding key's label and row re-derived from the bound label key, every number recomputed by both of verify's
paths from the published rows (a withheld text stands in as its number of words), and report.md re-rendered. What
needs the private text it says on one `unchecked:` line. With the private set in the experiment folder it is given
(`--exp`, the team's own copy), questions.jsonl is checked against it too; the team verifies its own results folder,
private files present, as before: everything.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arms.folder import BINDING, SECRET, read_binding
from core import jsonl
from core.errors import BadInput
from core.records import ANSWER_KEY, AnswerRow, KeyRow, PublicQuestion, RunInfo, blinding_key, row_id
from registration.prereg import Experiment, load_experiment
from registration.questions import Question, load_questions
from registration.seal import AMENDMENTS, MANIFEST, read_manifest, sealed_bytes, verify_seal

from .analysis import ANCHOR_FILES, RAW_FILES, anchor
from .blinding import label_for, label_secret
from .rederive import missing_answers
from .review_md import REVIEW
from .runinfo import bound_scope
from .verify import Published, Verification, verify

BUNDLE = "BUNDLE.json"
QUESTIONS = "questions.jsonl"
REDACTED = ("answers.jsonl", "judgments.jsonl")  # the anchored files that hold text
PUBLISHED = (*ANCHOR_FILES, "report.md", REVIEW, "batches.jsonl")  # the results folder's files a bundle accounts for
ANSWER_PUBLIC = frozenset({"type", "version", "row", "arm", "quant", "question_id", "sample", "status", "finish_reason",
                           "truncated", "prompt_tokens", "completion_tokens", "latency_s", "model_sha256",
                           "lora_sha256", "settings", "calls", "cached_calls", "effective", "thinking", "identity",
                           "retry_of"})
JUDGMENT_PUBLIC = frozenset({"type", "version", "judge", "label", "question_id", "status", "score", "repaired",
                             "prompt_sha256", "latency_s", "prompt_tokens", "completion_tokens", "cached_tokens",
                             "calls", "cached_calls", "time", "rubric", "kind", "retry_of"})
ERROR_PUBLIC = frozenset({"type", "kind", "status"})  # of a failure (models.retry.describe): its message may quote
ATTEMPT_PUBLIC = frozenset({"finish_reason", "repaired"})
STAND_IN = "withheld"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ----------------------------------------------------------------------------------------
# Withholding values, and standing in for them
# ----------------------------------------------------------------------------------------


def withhold(value: Any, words: bool = False) -> Any:
    """A value as a bundle publishes it: its sha256 (None stays None: it holds nothing)."""
    if value is None:
        return None
    if isinstance(value, str):
        return {"withheld": _sha(value.encode("utf-8")), **({"words": len(value.split())} if words else {})}
    canonical = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return {"withheld": _sha(canonical.encode("utf-8")), "json": True}


def _error(e: Any) -> Any:
    """A failure keeps its type, kind and HTTP status (the numbers count errors by kind); its message is withheld."""
    if isinstance(e, dict):
        return {k: v if k in ERROR_PUBLIC else withhold(v) for k, v in e.items()}
    return withhold(e)


def redact_answer(rec: dict[str, Any]) -> dict[str, Any]:
    """An answer row with every value but those listed public withheld: its text (with its number of words), the
    model's raw output, a glue's trace (which holds its prompt), any field a later version adds."""
    return {k: v if k in ANSWER_PUBLIC else _error(v) if k == "error" else withhold(v, words=k == "text")
            for k, v in rec.items()}


def redact_judgment(rec: dict[str, Any]) -> dict[str, Any]:
    """A verdict with its text withheld: the raw replies and parse errors of its attempts, its error, the text fields
    of the verdict (a rationale quotes what it grades); its score, flags (harmful) and counts stay."""
    out = {}
    for k, v in rec.items():
        if k in JUDGMENT_PUBLIC:
            out[k] = v
        elif k == "error":
            out[k] = _error(v)
        elif k == "fields" and isinstance(v, dict):
            out[k] = {f: x if x is None or isinstance(x, (bool, int, float)) else withhold(x) for f, x in v.items()}
        elif k == "attempts" and isinstance(v, list):
            out[k] = [{f: x if f in ATTEMPT_PUBLIC else _error(x) if f == "error" else withhold(x)
                       for f, x in a.items()} if isinstance(a, dict) else withhold(a) for a in v]
        else:
            out[k] = withhold(v)
    return out


def _marker(v: dict) -> bool:
    return isinstance(v.get("withheld"), str) and set(v) <= {"withheld", "words", "json"}


def stand_in(value: Any) -> Any:
    """A published value with each withheld one replaced by what the numbers can read of it: a text by as many
    words as it had, any other text by a marker, anything else by None."""
    if isinstance(value, dict):
        if _marker(value):
            words = value.get("words")
            if type(words) is int and 0 <= words <= 1_000_000:
                return " ".join([STAND_IN] * words)
            return None if value.get("json") else f"{STAND_IN}:{value['withheld']}"
        return {k: stand_in(v) for k, v in value.items()}
    if isinstance(value, list):
        return [stand_in(v) for v in value]
    return value


def _withheld_count(value: Any) -> int:
    if isinstance(value, dict):
        return 1 if _marker(value) else sum(_withheld_count(v) for v in value.values())
    if isinstance(value, list):
        return sum(_withheld_count(v) for v in value)
    return 0


# ----------------------------------------------------------------------------------------
# judge publish
# ----------------------------------------------------------------------------------------


def _object(path: Path) -> dict[str, Any]:
    try:
        doc = jsonl.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise BadInput(path, f"not valid JSON: {e}") from None
    if not isinstance(doc, dict):
        raise BadInput(path, "must hold a JSON object")
    return doc


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
    run = RunInfo.read_file(run_dir / "run.json").to_dict()
    if exp_dir is None and not isinstance(run.get("experiment_dir"), str):
        raise BadInput(run_dir / "run.json", "missing: the experiment folder is not recorded; pass it with --exp",
                       field="experiment_dir")
    exp_dir = Path(exp_dir or run["experiment_dir"])
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
                       "questions of it (ids, tags, clusters and the sha256 of each text, never the text); publish "
                       "where the set is")
    wanted = set(run["question_ids"])
    questions = [PublicQuestion(q.id, rel, q.line, list(q.tags), q.cluster, _sha(q.question.encode()),
                                None if q.reference is None else _sha(q.reference.encode()))
                 for rel in sets if rel in private for q in load_questions([sets[rel]]) if q.id in wanted]
    every_row = any(rel not in sets for rel in private)
    private_ids = {q.id for q in questions}
    tmp = out.parent / f".{out.name}.partial-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        (tmp / "results").mkdir(parents=True)
        files, rows = {}, {}
        names = [n for n in PUBLISHED if (run_dir / n).is_file() and n != SECRET]  # never the secret
        names += sorted(p.relative_to(run_dir).as_posix() for p in (run_dir / "plots").glob("*.png"))
        for name in names:
            data = (run_dir / name).read_bytes()
            target = tmp / "results" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if private and name in REDACTED:
                text, rows[name] = _redacted(run_dir / name, data, every_row, private_ids)
                target.write_bytes(text)
                files[name] = {"sha256": _sha(data), "published": "redacted"}
            elif private and name == REVIEW:
                files[name] = {"sha256": _sha(data), "published": "withheld"}
            else:
                target.write_bytes(data)
                files[name] = {"sha256": _sha(data), "published": "verbatim"}
        with jsonl.Appender(tmp / QUESTIONS) as w:
            for q in questions:
                w.write(q.to_dict())
        _copy_experiment(exp_dir, manifest, tmp / "experiment")
        doc = {"type": "bundle", "version": 1, "run": run["name"], "experiment": run.get("experiment"),
               "anchor": anchor(run_dir), "files": files, "private": private,
               "rows_withheld": "every row" if every_row else "rows of the private sets' questions" if private else
               "none", "questions_sha256": _sha((tmp / QUESTIONS).read_bytes()), "rows": rows}
        (tmp / BUNDLE).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        if out.is_dir():
            out.rmdir()
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _redacted(path: Path, data: bytes, every_row: bool, private_ids: set[str]) -> tuple[bytes, list[list[str]]]:
    """A raw file as published (line for line; a partial last line a kill left is not a record and is left out) and
    per line [sha256 of the original line, sha256 of the published one]."""
    redact = redact_answer if path.name == "answers.jsonl" else redact_judgment
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
            if every_row or rec.get("question_id") in private_ids:
                published = jsonl.dumps(redact(rec)).encode("utf-8")
        out.append(published)
        rows.append([_sha(line), _sha(published)])
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


# ----------------------------------------------------------------------------------------
# judge verify on a bundle
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bundle:
    """BUNDLE.json, read and checked for its structure."""

    dir: Path
    run: str
    anchor: str
    files: dict[str, dict[str, str]]
    private: dict[str, str]
    rows: dict[str, list[list[str]]]
    questions_sha256: str

    def original_anchor(self) -> str:
        """The anchor (judge.analysis.anchor) the original files' sha256 give."""
        listing = "".join(f"{self.files[name]['sha256']}  {name}\n" for name in ANCHOR_FILES)
        return _sha(listing.encode())


def _hex(x: Any) -> bool:
    return isinstance(x, str) and len(x) == 64 and not x.strip("0123456789abcdef")


def read_bundle(bundle: Path) -> Bundle:
    path = Path(bundle) / BUNDLE
    doc = _object(path)
    if doc.get("type") != "bundle" or doc.get("version") != 1:
        raise BadInput(path, "not a bundle `judge publish` wrote (type bundle, version 1)", field="type")
    files = doc.get("files")
    if not isinstance(files, dict) or not all(
            isinstance(f, dict) and _hex(f.get("sha256")) and f.get("published") in ("verbatim", "redacted",
                                                                                     "withheld")
            for f in files.values()):
        raise BadInput(path, "must map each file to its sha256 and how it is published", field="files")
    for name in ANCHOR_FILES:
        if name not in files:
            raise BadInput(path, f"lists no {name}: a bundle accounts for every file of the anchor", field="files")
    private, rows = doc.get("private"), doc.get("rows")
    if not isinstance(private, dict) or not all(_hex(v) for v in private.values()):
        raise BadInput(path, "must map each private file to its sha256", field="private")
    if not isinstance(rows, dict) or not all(
            isinstance(v, list) and all(isinstance(r, list) and len(r) == 2 and all(map(_hex, r)) for r in v)
            for v in rows.values()):
        raise BadInput(path, "must list per line of a redacted file the original's and the published sha256",
                       field="rows")
    for key in ("run", "anchor", "questions_sha256"):
        if not isinstance(doc.get(key), str):
            raise BadInput(path, "missing", field=key)
    return Bundle(Path(bundle), doc["run"], doc["anchor"], files, private, rows, doc["questions_sha256"])


def published_findings(b: Bundle) -> list[str]:
    """Every published file against BUNDLE.json: the ones published as written by their sha256, the redacted ones
    row by row (an edited score names its row), and nothing BUNDLE.json withholds published."""
    results, out = b.dir / "results", []
    for name, f in sorted(b.files.items()):
        path = results / name
        if f["published"] == "withheld":
            if path.exists():
                out.append(f"{path}: is published, but BUNDLE.json withholds it (it quotes the private files)")
            continue
        if not path.is_file():
            out.append(f"{path}: missing: BUNDLE.json lists it as published ({f['published']})")
            continue
        data = path.read_bytes()
        if f["published"] == "verbatim":
            if _sha(data) != f["sha256"]:
                out.append(f"{path}: sha256 {_sha(data)[:12]}…, but BUNDLE.json records the original as "
                           f"{f['sha256'][:12]}…: published as written, it was changed since")
            continue
        lines, rows = data.split(b"\n")[:-1], b.rows.get(name, [])
        for no, (line, (_, published)) in enumerate(zip(lines, rows, strict=False), start=1):
            if _sha(line) != published:
                out.append(f"{path}:{no}: this row is not the one `judge publish` wrote (sha256 {_sha(line)[:12]}…, "
                           f"BUNDLE.json records {published[:12]}…): a value of it (a score, a label, a count) was "
                           "changed since")
        if len(lines) != len(rows) or not data.endswith(b"\n") and data:
            out.append(f"{path}: holds {len(lines)} complete line(s), BUNDLE.json lists {len(rows)}")
    if not (b.dir / QUESTIONS).is_file() or _sha((b.dir / QUESTIONS).read_bytes()) != b.questions_sha256:
        out.append(f"{b.dir / QUESTIONS}: missing or changed since `judge publish` wrote it (BUNDLE.json records "
                   f"sha256 {b.questions_sha256[:12]}…)")
    if b.anchor != b.original_anchor():
        out.append(f"{b.dir / BUNDLE}: field 'anchor': reads {b.anchor}, but the original files' sha256 it lists give "
                   f"{b.original_anchor()}")
    return out


def bundle_questions(b: Bundle, exp: Experiment) -> tuple[list[Question], list[str], list[str]]:
    """The run's registered questions in the registration's order: a set in the experiment folder read from it (a
    private one, the team's own copy, also checked against questions.jsonl), a withheld private set as
    questions.jsonl describes it. Returns them, the findings, and the sets described only by questions.jsonl."""
    path = b.dir / QUESTIONS
    described: dict[str, list[tuple[int, PublicQuestion]]] = {}
    seen: dict[str, int] = {}
    for no, rec in jsonl.read(path):
        q = PublicQuestion.from_dict(rec, path, no)
        if q.id in seen:
            raise BadInput(path, f"question {q.id!r} is described twice (first at line {seen[q.id]})", line=no,
                           field="id")
        seen[q.id] = no
        described.setdefault(q.set, []).append((no, q))
    out: list[Question] = []
    problems: list[str] = []
    only: list[str] = []
    for p in exp.set_paths():
        rel = p.relative_to(exp.dir.resolve()).as_posix()
        if p.is_file() or rel not in b.private:
            qs = load_questions([p])
            by_id = {q.id: q for q in qs}
            for no, pq in described.get(rel, []):
                q = by_id.get(pq.id)
                if q is None:
                    problems.append(f"{path}:{no}: field 'id': {pq.id!r} is not a question of {rel}")
                    continue
                ref = None if q.reference is None else _sha(q.reference.encode())
                for field, got, want in (("line", pq.line, q.line), ("tags", pq.tags, list(q.tags)),
                                         ("cluster", pq.cluster, q.cluster),
                                         ("question_sha256", pq.question_sha256, _sha(q.question.encode())),
                                         ("reference_sha256", pq.reference_sha256, ref)):
                    if got != want:
                        problems.append(f"{path}:{no}: field {field!r}: reads {got!r}, but question {q.id!r} of "
                                        f"{rel} gives {want!r}")
            out += qs
        else:
            only.append(rel)
            out += [Question(pq.id, f"{STAND_IN}: sha256 {pq.question_sha256}",
                             None if pq.reference_sha256 is None else f"{STAND_IN}: sha256 {pq.reference_sha256}",
                             tuple(pq.tags), pq.cluster, Path(rel).name, pq.line) for _, pq in described.get(rel, [])]
    return out, problems, only


def _stand_in_folder(b: Bundle, to: Path) -> int:
    """The published results with each withheld value stood in for (stand_in), as a results folder verify reads;
    the number of values withheld."""
    results, count = b.dir / "results", 0
    for name, f in b.files.items():
        path = results / name
        if f["published"] == "withheld" or not path.is_file() or "/" in name:
            continue
        if f["published"] == "verbatim":
            shutil.copyfile(path, to / name)
            continue
        lines = []
        for no, line in enumerate(path.read_bytes().split(b"\n")[:-1], start=1):
            if line.strip():
                try:
                    rec = jsonl.loads(line.decode("utf-8"))
                except (UnicodeDecodeError, ValueError) as e:
                    raise BadInput(path, f"not valid JSON ({e})", line=no) from None
                count += _withheld_count(rec)
                line = jsonl.dumps(stand_in(rec)).encode("utf-8")
            lines.append(line + b"\n")
        (to / name).write_bytes(b"".join(lines))
    return count


def scope_findings(folder: Path, results: Path, exp: Experiment, questions: list[Question]) -> list[str]:
    """What verify checks of a bundle's rows without their text: every cell the binding registers has an answer row,
    each blinding key's row derives from its arm, quant, question and sample (its label from the bound label key only
    in a folder bound before blinding secrets: a bundle never holds the folder's secret), every answer is keyed and
    every key in the bound mode has a verdict of each bound judge. `folder`: the stand-in results (read); `results`:
    the bundle's (named)."""
    doc = read_binding(folder)
    if doc is None:
        return []  # verify names a folder without a binding
    scope = bound_scope(doc, exp, results / BINDING, questions)
    ids = set(scope.question_ids)
    rows = [c.record for c in jsonl.current(folder / "answers.jsonl", ANSWER_KEY, make=AnswerRow.from_dict).values()
            if c.record.arm in scope.arms and c.record.question_id in ids]
    out = missing_answers(results / "answers.jsonl", exp, scope, {r.row for r in rows})
    # labels derive from the folder's blinding secret, which a bundle never holds (legacy folders: the label key)
    secret = None if doc.get("blinding_secret_sha256") else label_secret(scope.label_key)
    path = results / "blinding.jsonl"
    keyed, pairs, label_of = set(), [], {}
    for no, rec in jsonl.read(folder / "blinding.jsonl"):
        k = blinding_key(rec, path, no)
        if not isinstance(k, KeyRow):
            if k.question_id in ids and k.first in scope.arms and k.second in scope.arms:
                pairs.append(k.label)
            continue
        keyed.add(k.label)
        if k.row != row_id(k.arm, k.quant, k.question_id, k.sample):
            out.append(f"{path}:{no}: field 'row': reads {k.row!r}, but arm {k.arm!r} at {k.quant}, question "
                       f"{k.question_id!r}, sample {k.sample} is row {row_id(k.arm, k.quant, k.question_id, k.sample)}")
        if secret is not None and k.label != label_for(secret, k.row):
            out.append(f"{path}:{no}: field 'label': reads {k.label!r}, but the label key binding.json binds gives "
                       f"row {k.row} the label {label_for(secret, k.row)}")
        label_of[k.row] = k.label
    ok = [r for r in rows if r.status == "ok"]
    wanted = [] if scope.mode == "pairwise" else [
        label_for(secret, r.row) if secret is not None else label_of.get(r.row, "(none)") for r in ok]
    for r, label in zip(ok, wanted, strict=False):
        if label not in keyed:
            out.append(f"{path}: no blinding key of the answer of arm {r.arm!r} at {r.quant}, question "
                       f"{r.question_id!r}, sample {r.sample} (label {label}): judge run keys every answer it blinds")
    wanted += pairs if scope.mode != "single" else []
    have = {(j.get("judge"), j.get("label")) for _, j in jsonl.read(folder / "judgments.jsonl")}
    for judge in scope.panel:
        for label in wanted:
            if (judge.name, label) not in have:
                out.append(f"{results / 'judgments.jsonl'}: no verdict of judge {judge.name!r} for label {label}: "
                           "binding.json registers this judge, and every blinded answer has one of each judge")
    return out


def verify_bundle(bundle: Path, exp_dir: Path | None = None, caches: list[Path] | None = None,
                  recorded: str | None = None) -> Verification:
    """Every mismatch in a published bundle, what it could not check without the private files (one line), what it
    checked, and the original results folder's anchor it is tied to."""
    b = read_bundle(bundle)
    results, exp_dir = b.dir / "results", Path(exp_dir or b.dir / "experiment")
    problems = published_findings(b)
    if not b.private:  # nothing withheld: the published folder is the results folder, checked as one
        v = verify(results, exp_dir, caches, recorded, secret_withheld=True)
        checked = (f"bundle of run {b.run!r}: nothing sealed private, every file published as written and checked "
                   "against BUNDLE.json; the results folder in it verified as any results folder",)
        return Verification(problems + v.problems, v.unchecked, v.anchor, checked)
    manifest = {rel: sha for rel, (sha, p) in read_manifest(exp_dir).items() if p}
    if manifest != b.private:
        problems.append(f"{b.dir / BUNDLE}: field 'private': lists {sorted(b.private)}, but {exp_dir / MANIFEST} binds "
                        f"{sorted(manifest)} private (or by other sha256)")
    exp = load_experiment(exp_dir)
    questions, found, only = bundle_questions(b, exp)
    problems += found
    raw = {name: b.files[name]["sha256"] for name in (*RAW_FILES, BINDING)}
    with tempfile.TemporaryDirectory(prefix="blindeval-bundle-") as tmp:
        withheld = _stand_in_folder(b, Path(tmp))
        v = verify(Path(tmp), exp_dir, [], recorded, Published(questions, raw, b.original_anchor(), REVIEW in b.files))
        problems += [p.replace(tmp, str(results)) for p in v.problems]
        unchecked = [u.replace(tmp, str(results)) for u in v.unchecked]
        problems += scope_findings(Path(tmp), results, exp, questions)
    absent = [rel for rel in b.private if not (exp_dir / rel).is_file()]
    redacted = " and ".join(n for n in REDACTED if b.files[n]["published"] == "redacted")
    unchecked.append(
        (f"without the private files ({', '.join(absent)}): " if absent else "what the bundle withholds: ")
        + f"the {withheld} values withheld from {redacted} (answers, the judges' replies and rationales) and all "
        "that is re-derived from them: the answers' and the judges' call keys, the judge prompts, the verdicts "
        "re-parsed from the raw replies, the blinding keys' scrub and grader-directed counts, the call cache; the "
        "blinding labels (they derive from the results folder's secret, never published: the anchor covers them); "
        "each published row against its original line's sha256 (BUNDLE.json rows); review.md"
        + (f"; questions.jsonl's account of {', '.join(only)} (each question's and reference's sha256; its tags "
           "and clusters only as far as the numbers, which read them, show them)" if only else ""))
    checked = (f"bundle of run {b.run!r}: every published file and row against BUNDLE.json; the seal of {exp_dir} "
               f"(its MANIFEST binds {', '.join(sorted(b.private))} by sha256 only) and binding.json, run.json and the "
               "amendments against it; the original answers.jsonl's and judgments.jsonl's sha256 against "
               "numbers.json; the scope complete; each blinding key's row re-derived; every number of "
               "numbers.json by both paths from the published rows; report.md rendered again"
               + (f"; questions.jsonl against {', '.join(r for r in b.private if r not in absent)}"
                  if len(absent) < len(b.private) else ""),
               "the anchor below is the original results folder's: binding.json, run.json, blinding.jsonl and "
               "numbers.json as published, with answers.jsonl's and judgments.jsonl's original sha256")
    return Verification(list(dict.fromkeys(problems)), list(dict.fromkeys(unchecked)), v.anchor, checked)
