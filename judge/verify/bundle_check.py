"""`judge verify BUNDLE`: a published bundle (judge.verify.bundle) verified. Its published files against
BUNDLE.json, its questions (questions.jsonl, against a private set the team holds), the gold it recorded, a results
folder stood in from its rows (judge.verify.withheld.stand_in) verified by judge.verify.checks as the original was,
its scope complete, and one line saying what could not be checked without the private files."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from arms.folder import BINDING, read_binding
from core import jsonl
from core.errors import BadInput
from core.records import ANSWER_KEY, AnswerRow, KeyRow, PublicQuestion, blinding_key, row_id
from registration.prereg import Experiment, load_experiment
from registration.questions import Question, load_questions
from registration.seal import MANIFEST, read_manifest

from ..gold.labels import LABELS_DIR
from ..gold.registry import SOURCES
from ..gold.sources import Recorded
from ..judging.blinding import label_for, label_secret
from ..outputs.review_md import REVIEW
from ..results.files import RAW_FILES, RETESTS
from ..results.runinfo import bound_scope
from .answers import missing_answers
from .bundle import ANCHOR_NOTE, BUNDLE, GOLD, QUESTIONS, REDACTED, Bundle, published_findings, read_bundle
from .bundle_schemas import schema_findings
from .checks import Published, Verification, verify
from .withheld import STAND_IN, Salts, read_salts, sha256_of, stand_in, withheld_count


def _hash_of(b: Bundle, salts: Salts | None, place: str, text: str) -> str | None:
    """What a bundle records of a question's text: its commitment (None: no salts to compute it with), or, in a
    version 1 bundle, its bare sha256."""
    if b.version == 1:
        return sha256_of(text.encode())
    return None if salts is None else salts.commit(place, text.encode())


def bundle_questions(b: Bundle, exp: Experiment, salts: Salts | None = None
                     ) -> tuple[list[Question], list[str], list[str], list[str]]:
    """The run's registered questions in the registration's order: a set in the experiment folder read from it (a
    private one, the team's own copy, also checked against questions.jsonl: its commitments opened with the results
    folder's `salts`), a withheld private set as questions.jsonl describes it. Returns them, the findings, the sets
    described only by questions.jsonl, and the private sets at hand whose commitments were not opened (no salts)."""
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
    unopened: list[str] = []
    for p in exp.set_paths():
        rel = p.relative_to(exp.dir.resolve()).as_posix()
        if p.is_file() or rel not in b.private:
            qs = load_questions([p], exp.set_formats_by_path())
            by_id = {q.id: q for q in qs}
            if described.get(rel) and b.version > 1 and salts is None:
                unopened.append(rel)
            for no, pq in described.get(rel, []):
                q = by_id.get(pq.id)
                if q is None:
                    problems.append(f"{path}:{no}: field 'id': {pq.id!r} is not a question of {rel}")
                    continue
                at = f"{QUESTIONS}:{rel}:{q.id}"
                ref = None if q.reference is None else _hash_of(b, salts, f"{at}:reference", q.reference)
                checks = [("line", pq.line, q.line), ("tags", pq.tags, list(q.tags)),
                          ("cluster", pq.cluster, q.cluster)]
                if b.version == 1 or salts is not None:
                    checks += [("question_sha256", pq.question_sha256,
                                _hash_of(b, salts, f"{at}:question", q.question)),
                               ("reference_sha256", pq.reference_sha256, ref)]
                for field, got, want in checks:
                    if got != want:
                        problems.append(f"{path}:{no}: field {field!r}: reads {got!r}, but question {q.id!r} of "
                                        f"{rel} gives {want!r}")
            out += qs
        else:
            only.append(rel)
            out += [Question(pq.id, f"{STAND_IN}: {pq.question_sha256}",
                             None if pq.reference_sha256 is None else f"{STAND_IN}: {pq.reference_sha256}",
                             tuple(pq.tags), pq.cluster, Path(rel).name, pq.line) for _, pq in described.get(rel, [])]
    return out, problems, only, unopened


def recorded_gold(b: Bundle) -> Recorded:
    """gold.jsonl: the gold program's results and the sealed gold records' matches on the answers whose text the
    bundle withholds (judge.gold.sources.Recorded)."""
    path, by_source = b.dir / GOLD, {}
    if b.gold_sha256 is None or not path.is_file():
        return Recorded()
    for no, rec in jsonl.read(path):
        label, name = rec.get("label"), rec.get("source")
        if not isinstance(label, str):
            raise BadInput(path, "must name the answer's blinded label", line=no, field="label")
        source = SOURCES.get(name) if isinstance(name, str) else None
        if source is None or source.reread is None:
            raise BadInput(path, "must name a gold source a bundle records: "
                           f"{', '.join(s.name for s in SOURCES.values() if s.reread)}", line=no, field="source")
        source.reread(rec, path, no, by_source.setdefault(source.name, {}), stand_in)
    return Recorded(by_source)


def _stand_in_folder(b: Bundle, to: Path) -> int:
    """The published results with each withheld value stood in for (stand_in), as a results folder verify reads;
    the number of values withheld. A person's labels file is chained again over its stood-in labels: its published
    lines are checked against BUNDLE.json, its original chain is not checkable without the notes."""
    results, count = b.dir / "results", 0
    for name, f in b.files.items():
        path = results / name
        if f["published"] == "withheld" or not path.is_file() or "/" in name and not name.startswith(f"{LABELS_DIR}/"):
            continue
        (to / name).parent.mkdir(parents=True, exist_ok=True)
        if f["published"] == "verbatim":
            shutil.copyfile(path, to / name)
            continue
        lines, prev = [], None
        for no, line in enumerate(path.read_bytes().split(b"\n")[:-1], start=1):
            if line.strip():
                try:
                    rec = jsonl.loads(line.decode("utf-8"))
                except (UnicodeDecodeError, ValueError) as e:
                    raise BadInput(path, f"not valid JSON ({e})", line=no) from None
                if not isinstance(rec, dict):
                    raise BadInput(path, "a record must be a JSON object", line=no)
                count += withheld_count(rec)
                rec = stand_in(rec)
                if name.startswith(f"{LABELS_DIR}/"):
                    rec["prev"] = rec.get("prev") if prev is None else prev
                    prev = jsonl.link(rec)
                line = jsonl.dumps(rec).encode("utf-8")
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
    secret = None if doc.blinding_secret_sha256 else label_secret(scope.label_key)
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
                  recorded: str | None = None, secret: Path | None = None) -> Verification:
    """Every mismatch in a published bundle, what it could not check without the private files (one line), what it
    checked, and the original results folder's anchor it is tied to. `secret`: the results folder's bundle.secret,
    with which the team opens questions.jsonl's commitments against its own copy of a private set."""
    b = read_bundle(bundle)
    results, exp_dir = b.dir / "results", Path(exp_dir or b.dir / "experiment")
    problems, no_schemas = schema_findings(b.dir, b.version)
    problems += published_findings(b)
    anchor_note = [] if recorded is not None else [f"no --anchor given: {ANCHOR_NOTE}"]
    if not b.private:  # nothing withheld: the published folder is the results folder, checked as one
        v = verify(results, exp_dir, caches, recorded, secret_withheld=True)
        checked = (f"bundle of run {b.run!r}: nothing sealed private, every file published as written and checked "
                   "against BUNDLE.json; the results folder in it verified as any results folder",)
        return Verification(problems + v.problems, no_schemas + v.unchecked + anchor_note, v.anchor, checked,
                            v.migrated)
    manifest = {rel: sha for rel, (sha, p) in read_manifest(exp_dir).items() if p}
    if manifest != b.private:
        problems.append(f"{b.dir / BUNDLE}: field 'private': lists {sorted(b.private)}, but {exp_dir / MANIFEST} binds "
                        f"{sorted(manifest)} private (or by other sha256)")
    exp = load_experiment(exp_dir)
    questions, found, only, unopened = bundle_questions(b, exp, None if secret is None else read_salts(secret))
    problems += found
    raw = {name: b.files[name]["sha256"] for name in (*RAW_FILES, RETESTS, BINDING) if name in b.files}
    gold = recorded_gold(b)
    with tempfile.TemporaryDirectory(prefix="blindeval-bundle-") as tmp:
        withheld = _stand_in_folder(b, Path(tmp))
        v = verify(Path(tmp), exp_dir, [], recorded,
                   Published(questions, raw, b.original_anchor(), REVIEW in b.files, gold))
        problems += [p.replace(tmp, str(results)) for p in v.problems]
        unchecked = no_schemas + [u.replace(tmp, str(results)) for u in v.unchecked]
        problems += scope_findings(Path(tmp), results, exp, questions)
    absent = [rel for rel in b.private if not (exp_dir / rel).is_file()]
    redacted = " and ".join(n for n in (*REDACTED, *b.rows) if n in b.files and b.files[n]["published"] == "redacted")
    unchecked.append(
        (f"without the private files ({', '.join(absent)}): " if absent else "what the bundle withholds: ")
        + f"the {withheld} values withheld from {redacted} (answers, the judges' replies and rationales, people's "
        "notes) and all that is re-derived from them: the answers' and the judges' call keys, the judge prompts, the "
        "verdicts re-parsed from the raw replies, the blinding keys' scrub and grader-directed counts, the call "
        "cache; the blinding labels (they derive from the results folder's blinding secret, never published: the "
        "anchor covers them); each published row against its original line (BUNDLE.json rows); review.md"
        + (f"; the gold program's results on the {len(gold.of('program'))} answers whose text is withheld, taken as "
           f"{GOLD} records them (the numbers they feed are recomputed)" if gold.of("program") else "")
        + (f"; which answers {len(gold.of('labels'))} sealed gold records matched by the sha256 of a withheld text, "
           "taken "
           f"as {GOLD} records them (each record's question and score are read from its sealed file)"
           if gold.of("labels") else "")
        + ("; people's labels' original hash chains (their notes withheld)"
           if any(n.startswith(f"{LABELS_DIR}/") for n in b.rows) else "")
        + (f"; questions.jsonl's account of {', '.join(only)} (a commitment to each question and reference; its "
           "tags and clusters only as far as the numbers, which read them, show them)" if only else "")
        + (f"; questions.jsonl's commitments to the texts of {', '.join(unopened)} (opened with the results "
           "folder's bundle.secret: --bundle-secret)" if unopened else ""))
    if b.version == 1:
        unchecked.append("a bundle of the previous version (BUNDLE.json version 1): its withheld values, question "
                         "and reference hashes and original lines are bare sha256 of their text, so a short value "
                         "(a number, a yes or no) can be guessed and confirmed by anyone; `judge publish` now writes "
                         "salted commitments a guess cannot confirm: publish the results folder again")
    checked = (f"bundle of run {b.run!r}: every published file and row against BUNDLE.json; the seal of {exp_dir} "
               f"(its MANIFEST binds {', '.join(sorted(b.private))} by sha256 only) and binding.json, run.json and the "
               "amendments against it; the original raw files' sha256 against numbers.json; the scope complete; "
               "each blinding key's row re-derived; every number of numbers.json by both paths from the "
               "published rows; report.md rendered again"
               + (f"; questions.jsonl against {', '.join(r for r in b.private if r not in absent)}"
                  if len(absent) < len(b.private) else ""),
               "the anchor below is the original results folder's: binding.json, run.json, blinding.jsonl and "
               "numbers.json as published, with answers.jsonl's and judgments.jsonl's original sha256")
    return Verification(list(dict.fromkeys(problems)), list(dict.fromkeys(unchecked + anchor_note)), v.anchor,
                        checked, v.migrated)
