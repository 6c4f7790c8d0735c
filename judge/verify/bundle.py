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

from dataclasses import dataclass
from pathlib import Path

from arms.folder import SECRET as BLINDING_SECRET
from core.errors import BadInput
from core.records import BundleInfo

from ..outputs.review_md import REVIEW
from ..results.files import ANCHOR_FILES, RETESTS
from .withheld import SECRET, is_sha256, sha256_of

BUNDLE = "BUNDLE.json"
QUESTIONS = "questions.jsonl"
GOLD = "gold.jsonl"  # the gold sources verify cannot compute where the text is withheld (judge.gold.sources.Recorded)
# The results folder's private side: what a bundle never holds, whatever else changes: the key of its salts, a
# blinding secret, and the logs that are not evidence of the run. Any top-level name holding "secret" is in it too.
NEVER_PUBLISHED = (SECRET, BLINDING_SECRET, "invocations.jsonl", "repaired.jsonl")
REDACTED = ("answers.jsonl", "judgments.jsonl", RETESTS)  # the raw files that hold text
PUBLISHED = (*ANCHOR_FILES, RETESTS, "report.md", REVIEW, "batches.jsonl")  # the files a bundle accounts for
ANCHOR_NOTE = ("the anchor is the whole defence of a bundle: one whose rows, numbers, report and BUNDLE.json are "
               "regenerated consistently passes every other check. Record it when the run finishes where the "
               "publisher cannot change it afterwards (a paper, a commit, a tweet), and check a bundle with `judge "
               "verify BUNDLE --anchor SHA256`")


def never_published(name: str) -> bool:
    """A results folder's file no bundle holds (`name` relative to the folder): its private side."""
    top = name.split("/")[0]
    return top in NEVER_PUBLISHED or "secret" in top.lower()


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
        return sha256_of(listing.encode())


def read_bundle(bundle: Path) -> Bundle:
    """BUNDLE.json through its contract (core.records.BundleInfo), and what a contract cannot say: every sha256 is
    64 hex digits, every file lies inside results/ and none is of the results folder's private side."""
    path = Path(bundle) / BUNDLE
    doc = BundleInfo.read_file(path)
    for name, f in doc.files.items():
        if not is_sha256(f.sha256):
            raise BadInput(path, f"reads {f.sha256!r}, which is not a sha256", field=f"files[{name!r}].sha256")
        if Path(name).is_absolute() or ".." in Path(name).parts or never_published(name):
            raise BadInput(path, f"lists {name!r}: a bundle's file lies inside results/ and is never one of the "
                           f"results folder's private side ({', '.join(NEVER_PUBLISHED)}, any name holding "
                           "'secret')", field="files")
    for name in ANCHOR_FILES:
        if name not in doc.files:
            raise BadInput(path, f"lists no {name}: a bundle accounts for every file of the anchor", field="files")
    for rel, sha in doc.private.items():
        if not is_sha256(sha):
            raise BadInput(path, f"reads {sha!r}, which is not a sha256", field=f"private[{rel!r}]")
    for name, rows in doc.rows.items():
        for no, row in enumerate(rows):
            if not all(map(is_sha256, row)):
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
            if sha256_of(data) != f["sha256"]:
                out.append(f"{path}: sha256 {sha256_of(data)[:12]}…, but BUNDLE.json records the original as "
                           f"{f['sha256'][:12]}…: published as written, it was changed since")
            continue
        lines, rows = data.split(b"\n")[:-1], b.rows.get(name, [])
        for no, (line, (_, published)) in enumerate(zip(lines, rows, strict=False), start=1):
            if sha256_of(line) != published:
                out.append(f"{path}:{no}: this row is not the one `judge publish` wrote (sha256 "
                           f"{sha256_of(line)[:12]}…, BUNDLE.json records {published[:12]}…): a value of it (a score, "
                           "a label, a count) was changed since")
        if len(lines) != len(rows) or not data.endswith(b"\n") and data:
            out.append(f"{path}: holds {len(lines)} complete line(s), BUNDLE.json lists {len(rows)}")
    for name, sha in ((QUESTIONS, b.questions_sha256), (GOLD, b.gold_sha256)):
        if sha is not None and (not (b.dir / name).is_file() or sha256_of((b.dir / name).read_bytes()) != sha):
            out.append(f"{b.dir / name}: missing or changed since `judge publish` wrote it (BUNDLE.json records "
                       f"sha256 {sha[:12]}…)")
    if b.anchor != b.original_anchor():
        out.append(f"{b.dir / BUNDLE}: field 'anchor': reads {b.anchor}, but the original files' sha256 it lists give "
                   f"{b.original_anchor()}")
    return out
