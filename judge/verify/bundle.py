"""A bundle a team can publish: `judge publish RESULTS_DIR --out DIR`, and `judge verify DIR --anchor SHA256` on it.

The anchor is a bundle's whole defence: one regenerated consistently (rows, numbers, report, BUNDLE.json) passes every
other check, so the anchor `judge run` printed must be recorded where the publisher cannot change it afterwards (a
paper, a commit, a tweet) and given to verify (ANCHOR_NOTE, printed by `judge publish` and by verify without it).

An experiment may seal files private (`judge seal --private`): bound by sha256 in its MANIFEST, kept out of the
repository. Its results folder still holds their text: the answers that repeat a question, the judge replies and
rationales that quote its reference, people's notes. A bundle is what a team can put in public, and enough to
recompute every number:

  BUNDLE.json         the run, the original folder's anchor, each file's original sha256 and how it is published
                      (`verbatim`, `redacted` or `withheld`), the private files (MANIFEST names and sha256), which rows
                      derive from them, and per line of a redacted file a commitment to the original line and the
                      sha256 of the published one
  questions.jsonl     the run's questions of the private sets, without their text (core.records.PublicQuestion)
  gold.jsonl          on each answer whose text is withheld, what verify cannot compute of its gold, computed at
                      publishing where the text is: the registered gold program's result, and which sealed gold
                      records matched it by its text's sha256 (verify runs the program, and matches, on the others)
  results/            binding.json, run.json, blinding.jsonl, numbers.json, report.md, the plots, batches.jsonl and
                      labels/_samples.jsonl as written; answers.jsonl, judgments.jsonl, retests.jsonl and people's
                      labels files with every value of a row derived from a private file withheld, but those the
                      numbers read (scores, statuses, labels, counts, tokens, call keys)
  experiment/         the sealed experiment folder without its private files: MANIFEST (which binds them by sha256),
                      amendments.jsonl and every other file it seals

A withheld value is replaced by {"withheld": sha256(salt ‖ value)} (a text's UTF-8, anything else with "json": true
its canonical JSON); an answer's text keeps its number of words ("words") and its counts of the registered style
covariates ("style"), all the numbers read of it. Each salt is HMAC-SHA256 of the results folder's `bundle.secret`
and the value's place (Salts), so no guess confirms a value and the team opens one commitment by revealing its salt.
The results folder's private side (NEVER_PUBLISHED: the secret, the logs that are not evidence, any name holding
"secret") is never in a bundle. The rows derived from private files are those of the private sets' questions when
every private file is a question set, every row otherwise (a private knowledge base or glue can be in any answer);
a person's label always loses its note and its chain link (which hashes the note). review.md, which quotes them, is
withheld. A bundle of the previous version (1) holds bare sha256 instead: it verifies, labelled guessable.

How a bundle is tied to the anchor. The anchor hashes six files: four are published byte for byte, and of the two
redacted ones (answers.jsonl, judgments.jsonl) BUNDLE.json states the original sha256, which numbers.json (one of
the four) records too, as it records retests.jsonl's. verify recomputes the anchor from them and prints it: it must
be the one recorded when the run finished. The published rows, labels and recorded gold results are tied
to it through the numbers they must reproduce; each redacted line to its original by the commitment BUNDLE.json
holds, which the team can open.

`judge verify DIR` on a bundle checks every published file against BUNDLE.json (an edited row is named), the seal of
experiment/ and the chain from its MANIFEST through binding.json and run.json to the anchor, the scope complete,
each blinding key's label and row re-derived from the bound label key, every number recomputed by both of verify's
paths from the published rows (a withheld text stands in as its words and style counts), and report.md re-rendered.
What needs the private text it says on one `unchecked:` line. With the private set in the experiment folder it is
given (`--exp`, the team's own copy) and the results folder's bundle.secret, questions.jsonl is checked against it
too; the team verifies its own results folder, private files present, as before: everything.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import shutil
import tempfile
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable

from arms.folder import BINDING, read_binding
from arms.folder import SECRET as BLINDING_SECRET
from core import jsonl
from core.errors import BadInput
from core.records import ANSWER_KEY, AnswerRow, BundleInfo, KeyRow, PublicQuestion, RunInfo, blinding_key, row_id
from registration.prereg import Experiment, load_experiment
from registration.questions import Question, load_questions
from registration.seal import AMENDMENTS, MANIFEST, read_manifest, sealed_bytes, verify_seal

from ..gold.labels import LABELS_DIR, SAMPLES
from ..gold.sources import Recorded, run_gold
from ..judging.blinding import label_for, label_secret
from ..numbers.biases import style_counts
from ..outputs.review_md import REVIEW
from ..results.files import ANCHOR_FILES, RAW_FILES, RETESTS, anchor
from ..results.runinfo import bound_scope
from .checks import Published, Verification, verify
from .rederive import missing_answers

BUNDLE = "BUNDLE.json"
VERSION = 2  # version 1 (the previous one) hashed each withheld value bare: a short one can be guessed and confirmed
QUESTIONS = "questions.jsonl"
GOLD = "gold.jsonl"  # the gold sources verify cannot compute where the text is withheld (judge.gold.sources.Recorded)
SECRET = "bundle.secret"  # in the results folder: the key every salt of its bundles derives from
# The results folder's private side: what a bundle never holds, whatever else changes: the key of its salts, a
# blinding secret, and the logs that are not evidence of the run. Any top-level name holding "secret" is in it too.
NEVER_PUBLISHED = (SECRET, BLINDING_SECRET, "invocations.jsonl", "repaired.jsonl")
REDACTED = ("answers.jsonl", "judgments.jsonl", RETESTS)  # the raw files that hold text
PUBLISHED = (*ANCHOR_FILES, RETESTS, "report.md", REVIEW, "batches.jsonl")  # the files a bundle accounts for
ANSWER_PUBLIC = frozenset({"type", "version", "row", "arm", "quant", "question_id", "sample", "status", "finish_reason",
                           "truncated", "prompt_tokens", "completion_tokens", "latency_s", "model_sha256",
                           "lora_sha256", "settings", "calls", "cached_calls", "effective", "thinking", "identity",
                           "retry_of"})
JUDGMENT_PUBLIC = frozenset({"type", "version", "judge", "label", "question_id", "status", "score", "repaired",
                             "prompt_sha256", "latency_s", "prompt_tokens", "completion_tokens", "cached_tokens",
                             "calls", "cached_calls", "time", "rubric", "kind", "retry_of", "retest"})
LABEL_PUBLIC = frozenset({"type", "version", "run_key", "label", "score", "labeller", "time"})  # note, prev withheld
ERROR_PUBLIC = frozenset({"type", "kind", "status"})  # of a failure (models.retry.describe): its message may quote
ATTEMPT_PUBLIC = frozenset({"finish_reason", "repaired"})
STAND_IN = "withheld"
ANCHOR_NOTE = ("the anchor is the whole defence of a bundle: one whose rows, numbers, report and BUNDLE.json are "
               "regenerated consistently passes every other check. Record it when the run finishes where the "
               "publisher cannot change it afterwards (a paper, a commit, a tweet), and check a bundle with `judge "
               "verify BUNDLE --anchor SHA256`")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def never_published(name: str) -> bool:
    """A results folder's file no bundle holds (`name` relative to the folder): its private side."""
    top = name.split("/")[0]
    return top in NEVER_PUBLISHED or "secret" in top.lower()


# ----------------------------------------------------------------------------------------
# Commitments: what a bundle holds of a withheld value
# ----------------------------------------------------------------------------------------


def commitment(salt: bytes, data: bytes) -> str:
    """sha256(salt ‖ value): without the salt no guess of the value can be confirmed; given it, anyone checks it."""
    return _sha(salt + data)


@dataclass(frozen=True)
class Salts:
    """The salts of a results folder's bundles: each value's salt is HMAC-SHA256(key, its place), a 256-bit value no
    other salt, commitment or value tells, so revealing one opens that commitment and nothing else. The key (256
    random bits) is the results folder's `bundle.secret`, made by the first `judge publish` and never published."""

    key: bytes

    def salt(self, place: str) -> bytes:
        return hmac.new(self.key, place.encode("utf-8"), hashlib.sha256).digest()

    def commit(self, place: str, data: bytes) -> str:
        return commitment(self.salt(place), data)


def read_salts(path: Path) -> Salts:
    """A `bundle.secret` file: 64 hex digits."""
    try:
        text = Path(path).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(path, f"cannot be read as a bundle secret: {e}") from None
    if not _hex(text):
        raise BadInput(path, "is not a bundle secret (64 hex digits): the salts of a bundle derive from it, so it is "
                       "never rewritten; restore it from a backup")
    return Salts(bytes.fromhex(text))


def folder_salts(run_dir: Path) -> Salts:
    """The results folder's salts, its `bundle.secret` made (256 random bits, owner-only, never replaced) if absent,
    so that every bundle of the folder commits each value the same way and its commitments can be opened later."""
    path = Path(run_dir) / SECRET
    if not path.exists():
        tmp = path.with_name(f".{SECRET}.{os.getpid()}.part")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="ascii") as f:
                f.write(secrets.token_hex(32) + "\n")
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, path)  # never over a secret another publish made meanwhile
            except FileExistsError:
                pass
        finally:
            tmp.unlink(missing_ok=True)
    return read_salts(path)


def _encoded(value: Any) -> bytes:
    """A value as its commitment reads it: a text's UTF-8, anything else its canonical JSON."""
    if isinstance(value, str):
        return value.encode("utf-8")
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def withhold(value: Any, salts: Salts, place: str, words: bool = False, style: tuple[str, ...] = ()) -> Any:
    """A value as a bundle publishes it: its commitment (None stays None: it holds nothing). A text the numbers read
    keeps its number of words (`words`) and its counts of the registered style covariates (`style`)."""
    if value is None:
        return None
    mark = {"withheld": salts.commit(place, _encoded(value))}
    if not isinstance(value, str):
        return mark | {"json": True}
    counts = style_counts(value)
    return mark | ({"words": len(value.split())} if words else {}) | (
        {"style": {c: int(counts[c]) for c in style if c != "length"}} if words and len(style) > 1 else {})


def _error(e: Any, salts: Salts, place: str) -> Any:
    """A failure keeps its type, kind and HTTP status (the numbers count errors by kind); its message is withheld."""
    if isinstance(e, dict):
        return {k: v if k in ERROR_PUBLIC else withhold(v, salts, f"{place}.{k}") for k, v in e.items()}
    return withhold(e, salts, place)


def redact_answer(rec: dict[str, Any], salts: Salts, place: str, style: tuple[str, ...] = ()) -> dict[str, Any]:
    """An answer row (at `place`, "answers.jsonl:LINE") with every value but those listed public withheld: its text
    (with its number of words and style counts), the model's raw output, a glue's trace (which holds its prompt), any
    field a later version adds."""
    return {k: v if k in ANSWER_PUBLIC else _error(v, salts, f"{place}:{k}") if k == "error"
            else withhold(v, salts, f"{place}:{k}", words=k == "text", style=style) for k, v in rec.items()}


def redact_judgment(rec: dict[str, Any], salts: Salts, place: str) -> dict[str, Any]:
    """A verdict with its text withheld: the raw replies and parse errors of its attempts, its error, the text fields
    of the verdict (a rationale quotes what it grades); its score, flags (harmful) and counts stay."""
    out = {}
    for k, v in rec.items():
        at = f"{place}:{k}"
        if k in JUDGMENT_PUBLIC:
            out[k] = v
        elif k == "error":
            out[k] = _error(v, salts, at)
        elif k == "fields" and isinstance(v, dict):
            out[k] = {f: x if x is None or isinstance(x, (bool, int, float)) else withhold(x, salts, f"{at}.{f}")
                      for f, x in v.items()}
        elif k == "judge_answer" and isinstance(v, dict):  # the judge's own answer: its text withheld, its call kept
            out[k] = {f: withhold(x, salts, f"{at}.{f}") if f == "text" else x for f, x in v.items()}
        elif k == "attempts" and isinstance(v, list):
            out[k] = [{f: x if f in ATTEMPT_PUBLIC else _error(x, salts, f"{at}.{n}.{f}") if f == "error"
                       else withhold(x, salts, f"{at}.{n}.{f}") for f, x in a.items()}
                      if isinstance(a, dict) else withhold(a, salts, f"{at}.{n}") for n, a in enumerate(v)]
        else:
            out[k] = withhold(v, salts, at)
    return out


def redact_label(rec: dict[str, Any], salts: Salts, place: str) -> dict[str, Any]:
    """A person's label with its note withheld (a note may quote the answer), and its chain link too: `prev` is the
    sha256 of the label before, note included, so it would confirm a guessed note. The first link (the run's labels
    key) stays."""
    return {k: v if k in LABEL_PUBLIC or k == "prev" and v == rec.get("run_key") or k == "note" and v == ""
            else withhold(v, salts, f"{place}:{k}") for k, v in rec.items()}


def _marker(v: dict) -> bool:
    return isinstance(v.get("withheld"), str) and set(v) <= {"withheld", "words", "json", "style"}


def _count(x: Any) -> int:
    return x if type(x) is int and 0 <= x <= 1_000_000 else 0


def stand_in_text(words: int, style: dict[str, Any]) -> str:
    """A text of `words` words (str.split) whose style counts (judge.numbers.biases.style_counts) are `style`'s: a
    heading line `#` each, a list item `- withheld` each (the first holding the citations, `[1]` each, in one word), the
    citations alone in one word where there is no list item, then words `withheld` up to the count. The fewest words
    any text with those counts has (a heading is one word, a list item two, citations fit in one), so it fits."""
    h, items, c = (_count(style.get(k)) for k in ("headers", "list_items", "citations"))
    lines = ["#"] * h + [f"- {'[1]' * c if n == 0 and c else STAND_IN}" for n in range(items)]
    if c and not items:
        lines.append("[1]" * c)
    used = h + 2 * items + (1 if c and not items else 0)
    return "\n".join([*lines, " ".join([STAND_IN] * max(0, words - used))])


def stand_in(value: Any) -> Any:
    """A published value with each withheld one replaced by what the numbers can read of it: a text by as many
    words, with as many headings, list items and citations, as it had; any other text by a marker; anything else by
    None."""
    if isinstance(value, dict):
        if _marker(value):
            words = value.get("words")
            if type(words) is int and 0 <= words <= 1_000_000:
                style = value.get("style")
                return stand_in_text(words, style if isinstance(style, dict) else {})
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
                       "questions of it (ids, tags, clusters and a commitment to each text, never the text); publish "
                       "where the set is")
    salts = folder_salts(run_dir) if private else None
    wanted = set(run["question_ids"])
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
                files[name] = {"sha256": _sha(data), "published": "redacted"}
            elif private and name == REVIEW:
                files[name] = {"sha256": _sha(data), "published": "withheld"}
            else:
                target.write_bytes(data)
                files[name] = {"sha256": _sha(data), "published": "verbatim"}
        for name, recs in ((QUESTIONS, [q.to_dict() for q in questions]), (GOLD, gold)):
            with jsonl.Appender(tmp / name) as w:
                for rec in recs:
                    w.write(rec)
        _copy_experiment(exp_dir, manifest, tmp / "experiment")
        doc = {"type": "bundle", "version": VERSION, "run": run["name"], "experiment": run.get("experiment"),
               "anchor": anchor(run_dir),
               "commitments": "sha256(salt || value), each value's salt HMAC-SHA256(the results folder's "
                              "bundle.secret, its place); never published" if private else "none",
               "files": files, "private": private,
               "rows_withheld": "every row" if every_row else "rows of the private sets' questions" if private else
               "none", "questions_sha256": _sha((tmp / QUESTIONS).read_bytes()),
               "gold_sha256": _sha((tmp / GOLD).read_bytes()), "rows": rows}
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
        if s.source == "program":
            out.append({"label": s.label, "source": "program", "status": s.status, "score": s.score,
                        "error": None if s.error is None else withhold(s.error, salts, f"{GOLD}:{s.label}:error")})
        elif s.source == "labels":
            out.append({"label": s.label, "source": "labels", "origin": s.origin})
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
        rows.append([salts.commit(f"{name}:{no}", line), _sha(published)])
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
    version: int  # 1: the previous version's bundle, whose withheld values are bare sha256 (guessable)
    run: str
    anchor: str
    files: dict[str, dict[str, str]]
    private: dict[str, str]
    rows: dict[str, list[list[str]]]
    questions_sha256: str
    gold_sha256: str | None  # None in a version 1 bundle: it recorded nothing of the gold

    def original_anchor(self) -> str:
        """The anchor (judge.results.files.anchor) the original files' sha256 give."""
        listing = "".join(f"{self.files[name]['sha256']}  {name}\n" for name in ANCHOR_FILES)
        return _sha(listing.encode())


def _hex(x: Any) -> bool:
    return isinstance(x, str) and len(x) == 64 and not x.strip("0123456789abcdef")


def read_bundle(bundle: Path) -> Bundle:
    """BUNDLE.json through its contract (core.records.BundleInfo), and what a contract cannot say: every sha256 is
    64 hex digits, every file lies inside results/ and none is of the results folder's private side."""
    path = Path(bundle) / BUNDLE
    doc = BundleInfo.read_file(path)
    for name, f in doc.files.items():
        if not _hex(f.sha256):
            raise BadInput(path, f"reads {f.sha256!r}, which is not a sha256", field=f"files[{name!r}].sha256")
        if Path(name).is_absolute() or ".." in Path(name).parts or never_published(name):
            raise BadInput(path, f"lists {name!r}: a bundle's file lies inside results/ and is never one of the "
                           f"results folder's private side ({', '.join(NEVER_PUBLISHED)}, any name holding "
                           "'secret')", field="files")
    for name in ANCHOR_FILES:
        if name not in doc.files:
            raise BadInput(path, f"lists no {name}: a bundle accounts for every file of the anchor", field="files")
    for rel, sha in doc.private.items():
        if not _hex(sha):
            raise BadInput(path, f"reads {sha!r}, which is not a sha256", field=f"private[{rel!r}]")
    for name, rows in doc.rows.items():
        for no, row in enumerate(rows):
            if not all(map(_hex, row)):
                raise BadInput(path, f"reads {row!r}, which is not two sha256", field=f"rows[{name!r}][{no}]")
    if doc.version > 1 and doc.gold_sha256 is None:
        raise BadInput(path, f"missing from a bundle of version {doc.version}", field="gold_sha256")
    return Bundle(Path(bundle), doc.version, doc.run, doc.anchor,
                  {n: {"sha256": f.sha256, "published": f.published} for n, f in doc.files.items()}, doc.private,
                  {n: [list(r) for r in rows] for n, rows in doc.rows.items()}, doc.questions_sha256,
                  doc.gold_sha256)


def published_findings(b: Bundle) -> list[str]:
    """Every published file against BUNDLE.json: the ones published as written by their sha256, the redacted ones
    row by row (an edited score names its row), nothing BUNDLE.json withholds published, and nothing of the results
    folder's private side."""
    results, out = b.dir / "results", []
    for path in sorted(p for p in results.rglob("*") if p.is_file()):
        if never_published(path.relative_to(results).as_posix()):
            out.append(f"{path}: is the results folder's private side ({', '.join(NEVER_PUBLISHED)}, any name "
                       "holding 'secret'), which no bundle holds: whoever has it can open every commitment or "
                       "un-blind the labels")
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
    for name, sha in ((QUESTIONS, b.questions_sha256), (GOLD, b.gold_sha256)):
        if sha is not None and (not (b.dir / name).is_file() or _sha((b.dir / name).read_bytes()) != sha):
            out.append(f"{b.dir / name}: missing or changed since `judge publish` wrote it (BUNDLE.json records "
                       f"sha256 {sha[:12]}…)")
    if b.anchor != b.original_anchor():
        out.append(f"{b.dir / BUNDLE}: field 'anchor': reads {b.anchor}, but the original files' sha256 it lists give "
                   f"{b.original_anchor()}")
    return out


def _hash_of(b: Bundle, salts: Salts | None, place: str, text: str) -> str | None:
    """What a bundle records of a question's text: its commitment (None: no salts to compute it with), or, in a
    version 1 bundle, its bare sha256."""
    if b.version == 1:
        return _sha(text.encode())
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
    path, program, matched = b.dir / GOLD, {}, {}
    if b.gold_sha256 is None or not path.is_file():
        return Recorded()
    for no, rec in jsonl.read(path):
        label, source = rec.get("label"), rec.get("source")
        if not isinstance(label, str):
            raise BadInput(path, "must name the answer's blinded label", line=no, field="label")
        if source == "labels":
            origin = rec.get("origin")
            if not isinstance(origin, str) or origin in matched:
                raise BadInput(path, "must name a sealed gold record (file:line) once", line=no, field="origin")
            matched[origin] = label
            continue
        if source != "program" or label in program:
            raise BadInput(path, "must be the gold program's result (source program, one per label) or a sealed "
                           "record's match (source labels)", line=no, field="source")
        status, score = rec.get("status"), rec.get("score")
        if status not in ("scored", "undecided", "error") or (type(score) is int) != (status == "scored"):
            raise BadInput(path, "must be a status (scored, undecided, error) with a score exactly when scored",
                           line=no, field="status")
        error = stand_in(rec.get("error"))
        if (error is None) != (status != "error") or error is not None and not isinstance(error, str):
            raise BadInput(path, "holds an error exactly when the status is error", line=no, field="error")
        program[label] = (status, score, error)
    return Recorded(program, matched)


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
                count += _withheld_count(rec)
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
    problems = published_findings(b)
    anchor_note = [] if recorded is not None else [f"no --anchor given: {ANCHOR_NOTE}"]
    if not b.private:  # nothing withheld: the published folder is the results folder, checked as one
        v = verify(results, exp_dir, caches, recorded, secret_withheld=True)
        checked = (f"bundle of run {b.run!r}: nothing sealed private, every file published as written and checked "
                   "against BUNDLE.json; the results folder in it verified as any results folder",)
        return Verification(problems + v.problems, v.unchecked + anchor_note, v.anchor, checked)
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
        unchecked = [u.replace(tmp, str(results)) for u in v.unchecked]
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
        + (f"; the gold program's results on the {len(gold.program)} answers whose text is withheld, taken as "
           f"{GOLD} records them (the numbers they feed are recomputed)" if gold.program else "")
        + (f"; which answers {len(gold.matched)} sealed gold records matched by the sha256 of a withheld text, taken "
           f"as {GOLD} records them (each record's question and score are read from its sealed file)"
           if gold.matched else "")
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
                        checked)
