"""`judge publish` and `judge verify BUNDLE`: a run whose question set is sealed private, published without it.

The run is real (`judge run` against the scripted server on 127.0.0.1): its arms answer by repeating the question,
its judge quotes the reference and the answer in its rationale and now and then replies with prose, so the private
text is in every raw file the way a real judge's rationale and a real model's echo put it there. The set's questions
and references carry a made-up word found nowhere else, so a leak cannot hide behind a public file that happens to
say the same.
"""
from __future__ import annotations

import csv
import hashlib
import hmac
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_folder import ROOT, SERVED, experiment, run

from core import jsonl
from core.errors import BadInput
from judge.gold.labelling import import_labels
from judge.gold.sealed import answer_sha256
from judge.results.files import ANCHOR_FILES, load
from judge.verify.bundle import read_bundle
from judge.verify.bundle_check import recorded_gold, verify_bundle
from judge.verify.publish import publish
from judge.verify.withheld import Salts, redact_answer, redact_judgment, stand_in
from registration.seal import seal

from conftest import cli
from support.scripted_server import ScriptedServer, Seen, Step, reply, verdict

NONCE = "Quibblethorpe"  # in every private question and reference, in no other file
WORDS = ["«Day»", 'the "Annual"', "Ärger-free", "night\\owl", "½-price", "weekend"]
QUESTIONS = [{"id": f"p{i}", "question": f"What does {NONCE} rule {i} say about {w} passes in {NONCE}?",
              "reference": f"{NONCE} rule {i}: a {w} pass costs {7 * i} zlotnik, by {NONCE} rule {i}.{i}",
              "tags": ["private", f"group{i % 2}"]} for i, w in enumerate(WORDS, start=1)]


class Echo:
    """An arm repeats its question; a judge quotes the reference and the answer it grades (the end of its prompt),
    and one verdict in four is prose instead of JSON (unscored: its raw reply and parse error hold the quote)."""

    def __call__(self, seen: Seen) -> Step:
        h = int(hashlib.sha256(seen.prompt.encode()).hexdigest(), 16)
        if seen.model.startswith("judge-model"):
            if h % 4 == 0:
                return reply(f"I would say the reference, {seen.prompt[-260:]}, is met.")
            return verdict({"rationale": "quoting " + seen.prompt[-260:], "score": h % 3, "harmful": False})
        # in markdown whose headings, list items and citations vary by arm and question (the style covariates)
        h = int(hashlib.sha256((seen.model + seen.prompt).encode()).hexdigest(), 16)
        return reply(f"{'## Answer' + chr(10) if h % 2 else ''}{'- ' if h % 3 else ''}{seen.model} repeats: "
                     f"{seen.prompt}{' [2][3]' * (h % 4)}{chr(10) + '* Rule 4.1' if h % 5 < 2 else ''}")


@pytest.fixture(scope="module")
def echo():
    with ScriptedServer(Echo(), models=SERVED) as server:
        yield server


STYLES = 'style = ["length", "headers", "list_items", "citations"]\n'
RETEST_AND_STYLE = (("attempts = 2\n", "attempts = 2\nretest = 8\n"),  # every judge asked 8 verdicts again
                    ("max_unscored = 0.10\n", "max_unscored = 0.5\n" + STYLES))  # H1 decided, adjusted for style


@pytest.fixture(scope="module")
def published(echo, tmp_path_factory) -> tuple[Path, Path, Path, str]:
    """(experiment, results folder, bundle, the anchor `judge run` printed): a run registering retests and the style
    covariates (the setups "retest" and "style covariates" below)."""
    root = tmp_path_factory.mktemp("published")
    exp = experiment(root, echo.openai_url)
    text = (exp / "prereg.toml").read_text()
    for old, new in RETEST_AND_STYLE:
        text = text.replace(old, new, 1)
    (exp / "prereg.toml").write_text(text)
    (exp / "sets" / "exam.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in QUESTIONS))
    seal(exp, private=("sets/exam.jsonl",))
    r = run(exp, root / "out")
    assert r.returncode in (0, 1) and "anchor: " in r.stdout, r.stderr  # 1: a registered check failed
    recorded = r.stdout.split("anchor: ")[1].strip()
    p = cli("judge", "publish", str(root / "out"), "--out", str(root / "bundle"))
    assert p.returncode == 0, p.stderr
    assert f"tied to anchor {recorded}" in p.stdout
    assert f"anchor: {recorded}: the anchor is the whole defence of a bundle" in p.stdout
    assert "(a paper, a commit, a tweet)" in p.stdout and "--anchor SHA256" in p.stdout
    return exp, root / "out", root / "bundle", recorded


def by_hand_anchor(folder: Path) -> str:
    listing = "".join(f"{hashlib.sha256((folder / n).read_bytes()).hexdigest()}  {n}\n" for n in ANCHOR_FILES)
    return hashlib.sha256(listing.encode()).hexdigest()


@pytest.mark.integration
def test_a_run_with_a_private_set_published_verifies_from_the_bundle_alone(published):
    exp, out, bundle, recorded = published
    assert not (bundle / "experiment" / "sets" / "exam.jsonl").exists()
    assert recorded == by_hand_anchor(out)
    r = cli("judge", "verify", str(bundle), "--anchor", recorded)
    assert r.returncode == 0, r.stderr
    unchecked = [line for line in r.stdout.splitlines() if line.startswith("unchecked: ")]
    assert len(unchecked) == 1 and unchecked[0].startswith("unchecked: without the private files (sets/exam.jsonl): ")
    assert f"anchor: {recorded}" in r.stdout.splitlines()
    assert "checked: the anchor below is the original results folder's" in r.stdout
    assert "re-run" not in r.stdout + r.stderr
    alone = cli("judge", "verify", str(bundle))  # passes, and says loudly what only --anchor would catch
    assert alone.returncode == 0, alone.stderr
    assert "unchecked: no --anchor given: the anchor is the whole defence of a bundle" in alone.stdout
    assert alone.stdout.splitlines()[-1].startswith("verify: NOT compared with a recorded anchor: the anchor is")
    assert "(a paper, a commit, a tweet)" in alone.stdout and "anchor given" not in r.stdout
    wrong = verify_bundle(bundle, recorded="0" * 64).problems
    assert wrong == [f"anchor: this folder's anchor is {recorded}, not the {'0' * 64} recorded: something a decision "
                     "depends on (binding.json, run.json, the raw files or numbers.json) changed since"]


def private_texts() -> list[str]:
    """Every question and reference of the private set, each whole and as 16-character pieces from its start, middle
    and end, and the made-up word."""
    out = [NONCE]
    for q in QUESTIONS:
        for text in (q["question"], q["reference"]):
            out += [text, text[:16], text[len(text) // 2 - 8:len(text) // 2 + 8], text[-16:]]
    return out


def forms(text: str) -> list[bytes]:
    """A text as a file may hold it: UTF-8, and inside a JSON string (escaped, with or without non-ASCII escapes)."""
    return [text.encode(), json.dumps(text)[1:-1].encode(), json.dumps(text, ensure_ascii=False)[1:-1].encode()]


def holding(folder: Path, texts: list[str]) -> dict[str, list[str]]:
    """Each file under `folder` that holds any of `texts` in any form, with the texts it holds."""
    found = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        hits = [t for t in texts if any(f in data for f in forms(t))]
        if hits:
            found[str(path.relative_to(folder))] = hits
    return found


@pytest.mark.integration
def test_the_bundle_holds_no_byte_of_the_private_set(published):
    exp, out, bundle, _ = published
    texts = private_texts()
    # the results folder holds them all (answers repeat the questions, rationales and prose replies quote the
    # references), so this check can fail
    held = holding(out, texts)
    assert {"answers.jsonl", "judgments.jsonl", "review.md"} <= set(held), held
    assert set(sum(held.values(), [])) == set(texts)
    assert holding(bundle, texts) == {}


@pytest.mark.integration
def test_an_edited_score_in_the_bundle_fails_naming_its_row(published, tmp_path):
    _, _, bundle, _ = published
    edited = tmp_path / "bundle"
    shutil.copytree(bundle, edited)
    path = edited / "results" / "judgments.jsonl"
    lines = path.read_text().splitlines()
    n = next(i for i, line in enumerate(lines) if json.loads(line)["status"] == "scored")
    rec = json.loads(lines[n])
    rec["score"] = rec["fields"]["score"] = (rec["score"] + 1) % 3
    lines[n] = jsonl.dumps(rec)
    path.write_text("\n".join(lines) + "\n")
    problems = verify_bundle(edited).problems
    assert problems[0].startswith(f"{path}:{n + 1}: this row is not the one `judge publish` wrote"), problems
    assert any(p.startswith("numbers.json cells[") for p in problems)  # and the numbers no longer follow from the rows
    r = cli("judge", "verify", str(edited))
    assert r.returncode == 1 and f"  - {path}:{n + 1}: this row is not the one" in r.stderr, r.stderr


@pytest.mark.integration
def test_the_bundle_is_tied_to_its_manifest(published, tmp_path):
    """The published experiment folder is checked by its seal, and its MANIFEST (which binds the private set by
    sha256) by the hash binding.json recorded of it: neither a sealed file nor the private set's hash can change."""
    _, _, bundle, _ = published
    edited = tmp_path / "prereg"
    shutil.copytree(bundle, edited)
    with (edited / "experiment" / "prereg.toml").open("a") as f:
        f.write("# edited after the run\n")
    problems = verify_bundle(edited).problems
    assert problems and problems[0].startswith("seal: ") and "prereg.toml" in problems[0], problems

    edited = tmp_path / "manifest"
    shutil.copytree(bundle, edited)
    other = hashlib.sha256(b"another private set").hexdigest()
    manifest = edited / "experiment" / "MANIFEST"
    was = json.loads((edited / "BUNDLE.json").read_text())["private"]["sets/exam.jsonl"]
    assert was in manifest.read_text()
    manifest.write_text(manifest.read_text().replace(was, other))
    doc = json.loads((edited / "BUNDLE.json").read_text())
    doc["private"]["sets/exam.jsonl"] = other  # consistently, as a forger would
    (edited / "BUNDLE.json").write_text(json.dumps(doc, indent=1) + "\n")
    problems = verify_bundle(edited).problems
    assert problems[0].startswith("binding.json: MANIFEST sha256: bound "), problems
    assert any(p.startswith("binding.json: set sets/exam.jsonl sha256: bound ") for p in problems), problems


@pytest.mark.integration
def test_a_withheld_private_set_is_named_and_never_asks_for_a_rerun(published, tmp_path):
    exp, out, _, _ = published
    withheld = tmp_path / "exp"
    shutil.copytree(exp, withheld)
    (withheld / "sets" / "exam.jsonl").unlink()
    r = cli("judge", "verify", str(out), "--exp", str(withheld), "--no-cache")
    assert r.returncode == 2
    assert f"{withheld / 'sets' / 'exam.jsonl'}: is sealed private" in r.stderr and "judge publish" in r.stderr
    assert "re-run" not in r.stderr, r.stderr


@pytest.mark.integration
def test_with_the_private_set_at_hand_the_published_questions_are_checked_against_it(published, tmp_path):
    exp, out, bundle, recorded = published
    edited = tmp_path / "bundle"
    shutil.copytree(bundle, edited)
    qpath = edited / "questions.jsonl"
    rows = [json.loads(line) for line in qpath.read_text().splitlines()]
    rows[2]["question_sha256"] = hashlib.sha256(b"another question").hexdigest()  # no number reads it
    qpath.write_text("".join(jsonl.dumps(r) + "\n" for r in rows))
    doc = json.loads((edited / "BUNDLE.json").read_text())
    doc["questions_sha256"] = hashlib.sha256(qpath.read_bytes()).hexdigest()  # consistently, as a forger would
    (edited / "BUNDLE.json").write_text(json.dumps(doc, indent=1) + "\n")
    alone = verify_bundle(edited, recorded=recorded)
    assert alone.problems == []
    assert "questions.jsonl's account of sets/exam.jsonl (a commitment to each question and reference" in \
        alone.unchecked[0]
    # the set at hand, without the salts: the commitments cannot be opened, and verify says so
    unopened = verify_bundle(edited, exp, recorded=recorded)
    assert unopened.problems == [] and "questions.jsonl's commitments to the texts of sets/exam.jsonl (opened with " \
        "the results folder's bundle.secret: --bundle-secret)" in unopened.unchecked[0]
    team = verify_bundle(edited, exp, recorded=recorded, secret=out / "bundle.secret")
    key = bytes.fromhex((out / "bundle.secret").read_text().strip())
    want = opened("questions.jsonl:sets/exam.jsonl:p3:question", QUESTIONS[2]["question"], key)
    assert team.problems == [f"{qpath}:3: field 'question_sha256': reads {rows[2]['question_sha256']!r}, but question "
                             f"'p3' of sets/exam.jsonl gives {want!r}"]
    assert len(team.unchecked) == 1 and team.unchecked[0].startswith("what the bundle withholds: ")
    r = cli("judge", "verify", str(edited), "--exp", str(exp), "--bundle-secret", str(out / "bundle.secret"))
    assert r.returncode == 1 and f"{qpath}:3: field 'question_sha256'" in r.stderr, r.stderr


@pytest.mark.integration
def test_publish_writes_a_new_folder_outside_the_run_and_the_experiment(published, tmp_path):
    exp, out, bundle, _ = published
    for target, said in ((bundle, "exists: a bundle is written to a new folder"),
                         (out / "bundle", "lies inside the results folder"),
                         (exp / "bundle", "lies inside the experiment folder")):
        with pytest.raises(BadInput) as e:
            publish(out, target)
        assert said in str(e.value)
    assert not (out / "bundle").exists() and not (exp / "bundle").exists()


# --- every setup the harness supports, published and verified from the bundle alone ------------------------------

GOLD = """def score(question, reference, answer):
    # reads the question's and the reference's text and the answer's: a stand-in for any of them scores otherwise
    return (len(question.question) + len(reference or "") + len(answer)) % 3
"""
def _private_set(exp: Path, private: tuple[str, ...] = ("sets/exam.jsonl",)) -> None:
    (exp / "sets" / "exam.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in QUESTIONS))
    seal(exp, private=private)


def _registered(root: Path, url: str, edit, private: tuple[str, ...] = ("sets/exam.jsonl",), kb: bool = False,
                public: bool = False, **kw) -> Path:
    """A new experiment like the published one, its prereg.toml edited, with a private knowledge base (`kb`) or a
    public set beside the private one (`public`), sealed with `private` private."""
    exp = root / "exp"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    if public:  # its questions' gold is computed again by verify; the private set's is recorded
        (exp / "sets" / "open.jsonl").write_text("".join(json.dumps({
            "id": f"o{i}", "question": f"Which hour does the depot {i} open?", "reference": f"At {i + 6}.",
            "tags": ["open"]}) + "\n" for i in range(1, 4)))
    exp = experiment(root, url, **kw)
    if kb:
        _kb(exp)
    (exp / "prereg.toml").write_text(edit((exp / "prereg.toml").read_text()))
    (exp / "pgold.py").write_text(GOLD)
    _private_set(exp, private)
    return exp


def _finished(exp: Path, out: Path) -> Path:
    r = run(exp, out)
    assert r.returncode in (0, 1) and "anchor: " in r.stdout, r.stderr  # 1: H1 undecided (prose verdicts)
    return out


def _labelled(published, root: Path) -> tuple[Path, Path]:
    """The published fixture's run, copied, with people's labels (their notes quote the private references) imported
    and its numbers computed again by `judge run` (which repeats no call)."""
    exp, out, _, _ = published
    copy = root / "out"
    shutil.copytree(out, copy)
    keys = [json.loads(line) for line in (copy / "blinding.jsonl").read_text().splitlines()]
    with (root / "labels.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["label", "score", "note"])
        w.writerows([k["label"], n % 3, QUESTIONS[n % 6]["reference"]] for n, k in enumerate(keys[::2]))
    import_labels(copy, root / "labels.csv", "ann")
    return exp, _finished(exp, copy)


def _sealed_gold(root: Path, url: str) -> tuple[Path, Path]:
    """A private set, and a sealed gold labels file (`[gold] labels`) scoring half the answers of a first run of it by
    the sha256 of their text as the judge saw it (the run in the test is the second: the same answers)."""
    exp = _registered(root, url, lambda t: t)
    items = load(_finished(exp, root / "first")).items
    (exp / "gold").mkdir()
    (exp / "gold" / "labels.jsonl").write_text("".join(json.dumps({
        "type": "gold", "version": 1, "question_id": i.question_id, "answer_sha256": answer_sha256(i.answer),
        "score": n % 3, "labeller": "key", "time": "2026-12-01T10:00:00+00:00", "note": ""}) + "\n"
        for n, i in enumerate(items) if n % 2 == 0))
    with (exp / "prereg.toml").open("a") as f:
        f.write('\n[gold]\nlabels = ["gold/labels.jsonl"]\n')
    seal(exp, private=("sets/exam.jsonl",))
    return exp, _finished(exp, root / "out")


def _copied(published, root: Path) -> tuple[Path, Path]:
    """The published fixture's run (it registers retests and style covariates), copied."""
    exp, out, _, _ = published
    shutil.copytree(out, root / "out")
    return exp, root / "out"


def _new_run(root: Path, url: str, edit, **kw) -> tuple[Path, Path]:
    exp = _registered(root, url, edit, **kw)
    return exp, _finished(exp, root / "out")


SETUPS = {  # each gives (experiment, a finished results folder)
    "gold program on a private set": lambda root, url, published: _new_run(
        root, url, lambda t: t + '\n[gold]\nprogram = "pgold.py:score"\n', public=True,
        sets='"sets/exam.jsonl", "sets/open.jsonl"'),
    "sealed gold labels on a private set": lambda root, url, published: _sealed_gold(root, url),
    "people's labels": lambda root, url, published: _labelled(published, root),
    "retest": lambda root, url, published: _copied(published, root),
    "style covariates": lambda root, url, published: _copied(published, root),
    "private knowledge base": lambda root, url, published: _new_run(
        root, url, lambda t: t, private=tuple(f"kb/d{i:02d}.md" for i in range(1, 11)),
        glue='glue = "glue.py:answer"\n', kb=True),
}
KB_WORD = "Zorvexian"  # in every line of the private knowledge base, in no other file


def kb_articles(i: int) -> list[str]:
    return [f"Article {i}.{j}. {KB_WORD} rule {j} sets a {KB_WORD} fee of {i * j} zlotnik on passes."
            for j in range(1, 4)]


def _kb(exp: Path) -> None:
    """The demo glue's knowledge base rewritten with the made-up word, in terms the questions retrieve."""
    for i in range(1, 11):
        (exp / "kb" / f"d{i:02d}.md").write_text(f"# {KB_WORD} part {i}\n\n" + "\n\n".join(kb_articles(i)) + "\n")


@pytest.mark.integration
@pytest.mark.parametrize("setup", list(SETUPS))
def test_an_honest_bundle_verifies_from_itself_alone_in_every_setup(setup, echo, published, tmp_path):
    exp, out = SETUPS[setup](tmp_path, echo.openai_url, published)
    recorded = by_hand_anchor(out)
    (out / "blinding.secret").write_text("a blinding secret of the folder\n")  # the private side: never published
    bundle = publish(out, tmp_path / "bundle")
    v = verify_bundle(bundle, recorded=recorded)
    assert v.problems == [] and v.anchor == recorded, v.problems
    assert not any("previous version" in u for u in v.unchecked)
    if setup == "retest":
        assert (out / "retests.jsonl").read_text() and "retests.jsonl" in read_bundle(bundle).rows
    if setup == "people's labels":  # a label's chain link hashes the label before, note included: withheld too
        links = [hashlib.sha256(line).hexdigest() for line in (out / "labels" / "ann.jsonl").read_bytes().splitlines()]
        assert not [p for p in bundle.rglob("*.json*") if any(x in p.read_text() for x in links)]
    if setup.startswith("sealed gold labels"):  # the sealed records matched withheld answers at publishing
        matched = recorded_gold(read_bundle(bundle)).of("labels")
        assert len(matched) == len((exp / "gold" / "labels.jsonl").read_text().splitlines())
        gold = json.loads((out / "numbers.json").read_text())["judge_validity"]["gold"]
        assert gold["with_gold"] == len(matched), gold
    if setup == "style covariates":  # the decision is adjusted for style: the stand-ins must count as the answers do
        style = json.loads((out / "numbers.json").read_text())["comparisons"][0]["style"]
        assert {"headers", "list_items", "citations"} & set(style["covariates"]), style
    if setup.startswith("gold program"):  # recorded where the text is withheld, run again by verify elsewhere
        keys = [json.loads(line) for line in (out / "blinding.jsonl").read_text().splitlines()]
        private = {k["label"] for k in keys if k["question_id"].startswith("p")}
        assert set(recorded_gold(read_bundle(bundle)).of("program")) == private and len(private) < len(keys)
        assert f"the gold program's results on the {len(private)} answers whose text is withheld" in v.unchecked[0]
        # a recorded result changed, BUNDLE.json rewritten to match as a forger would: the anchored numbers differ
        rows = [json.loads(line) for line in (bundle / "gold.jsonl").read_text().splitlines()]
        rows[0] |= {"status": "scored", "score": ((rows[0]["score"] or 0) + 1) % 3, "error": None}
        (bundle / "gold.jsonl").write_text("".join(jsonl.dumps(r) + "\n" for r in rows))
        doc = json.loads((bundle / "BUNDLE.json").read_text())
        doc["gold_sha256"] = hashlib.sha256((bundle / "gold.jsonl").read_bytes()).hexdigest()
        (bundle / "BUNDLE.json").write_text(json.dumps(doc, indent=1) + "\n")
        forged = verify_bundle(bundle, recorded=recorded).problems
        assert forged and all(p.startswith("numbers.json ") for p in forged), forged
    # nothing of the private files' text, nor of the folder's secrets, is in the bundle
    texts = [a for i in range(1, 11) for a in kb_articles(i)] if setup == "private knowledge base" else \
        private_texts()
    assert "answers.jsonl" in holding(out, texts)  # so this check can fail
    texts += [(out / n).read_text().strip() for n in ("blinding.secret", "bundle.secret")]
    assert holding(bundle, texts) == {}
    assert not [p for p in bundle.rglob("*") if "secret" in p.name]


# --- what is withheld from a row, for any row ----------------------------------------------------------------

secret = st.text(min_size=1, max_size=12).map(lambda s: f"\u00a7{s}\u00b6")  # § and ¶: in no published value
text = st.text(max_size=20)


KEY = bytes(range(32))  # a bundle.secret's 256 bits


def opened(place: str, value: str, key: bytes = KEY) -> str:
    """A commitment by its definition, written out here: sha256(salt || value), the salt HMAC-SHA256(key, place)."""
    salt = hmac.new(key, place.encode(), hashlib.sha256).digest()
    return hashlib.sha256(salt + value.encode()).hexdigest()


def leaks(record: dict, s: str) -> bool:
    line = jsonl.dumps(record)
    return any(f.decode() in line for f in forms(s)) or s in json.dumps(record)


@pytest.mark.unit
@settings(max_examples=150, deadline=None)
@given(secret, text, st.dictionaries(st.sampled_from(["message", "body", "detail"]), st.just(None), max_size=3),
       st.sampled_from(["timeout", "http", "other"]))
def test_an_answer_row_keeps_what_the_numbers_read_and_no_byte_of_its_text(s, words, extra, kind):
    row = {"type": "answer", "version": 1, "row": "r1", "arm": "base", "quant": "Q8_0", "question_id": "q1",
           "sample": 0, "status": "ok", "truncated": False, "prompt_tokens": 5, "completion_tokens": 7,
           "calls": ["a" * 64], "settings": {"max_tokens": 64}, "retry_of": 3,
           "text": f"{words} {s} {words}", "raw_output": s, "trace": {"prompt": [s], "ids": ["d1"]},
           "error": {"type": "APIError", "kind": kind, "status": 500, "message": s, **{k: s for k in extra}},
           "a_later_field": {"nested": [s]}}
    out = redact_answer(row, Salts(KEY), "answers.jsonl:7")
    assert not leaks(out, s)
    assert {k: out[k] for k in ("row", "arm", "quant", "question_id", "sample", "status", "truncated", "calls",
                                "prompt_tokens", "completion_tokens", "settings", "retry_of")} == \
        {k: row[k] for k in ("row", "arm", "quant", "question_id", "sample", "status", "truncated", "calls",
                             "prompt_tokens", "completion_tokens", "settings", "retry_of")}
    assert out["text"]["withheld"] == opened("answers.jsonl:7:text", row["text"])
    assert out["text"]["withheld"] != hashlib.sha256(row["text"].encode()).hexdigest()
    back = stand_in(out)
    assert len(back["text"].split()) == len(row["text"].split())  # all the numbers read of a text
    assert back["error"]["kind"] == kind and back["error"]["status"] == 500


@pytest.mark.unit
@settings(max_examples=150, deadline=None)
@given(secret, st.sampled_from(["scored", "unscored", "error"]), st.booleans())
def test_a_verdict_keeps_its_score_and_flags_and_no_byte_of_its_text(s, status, harmful):
    rec = {"type": "judgment", "version": 1, "judge": "j", "label": "L1", "question_id": "q1", "status": status,
           "score": 2 if status == "scored" else None, "repaired": False, "prompt_sha256": "b" * 64,
           "fields": {"rationale": s, "score": 2, "harmful": harmful, "quotes": [s]} if status == "scored" else None,
           "error": None if status == "scored" else f"no verdict: {s}",
           "attempts": [{"raw": s, "error": f"parse error near {s}", "finish_reason": "stop", "repaired": False},
                        {"raw": None, "error": {"kind": "timeout", "message": s}}],
           "time": "2026-01-01T00:00:00+00:00", "kind": "single", "rubric": "correctness", "calls": ["c" * 64]}
    out = redact_judgment(rec, Salts(KEY), "judgments.jsonl:3")
    assert not leaks(out, s)
    keep = ("judge", "label", "question_id", "status", "score", "repaired", "prompt_sha256", "time", "kind", "rubric",
            "calls")
    assert {k: out[k] for k in keep} == {k: rec[k] for k in keep}
    back = stand_in(out)
    if status == "scored":
        assert back["fields"]["harmful"] is harmful and back["fields"]["score"] == 2
    assert back["attempts"][1]["raw"] is None and back["attempts"][1]["error"]["kind"] == "timeout"


@pytest.mark.unit
@settings(max_examples=100, deadline=None)
@given(st.text(max_size=12), st.sampled_from(["answers.jsonl:3:text", "judgments.jsonl:5:attempts.0.raw"]),
       st.binary(min_size=32, max_size=32))
def test_a_withheld_value_is_a_commitment_only_its_salt_opens(value, place, key):
    """A guess confirms nothing without the salt (the bare sha256 is not there, another key or place commits
    otherwise); revealing the salt opens it."""
    out = redact_answer({"text": value}, Salts(key), place.rsplit(":", 1)[0])
    mark = out["text"]["withheld"]
    if place.endswith(":text"):
        assert mark == opened(place, value, key)
        assert mark == hashlib.sha256(Salts(key).salt(place) + value.encode()).hexdigest()
    assert mark != hashlib.sha256(value.encode()).hexdigest()
    other = bytes(b ^ 1 for b in key)
    assert redact_answer({"text": value}, Salts(other), place.rsplit(":", 1)[0])["text"]["withheld"] != mark
    assert redact_answer({"text": value}, Salts(key), "answers.jsonl:4")["text"]["withheld"] != mark


PIECES = ["#", "##", " ", "\n", "\t", "- ", "* ", "1. ", "[2]", "Rule 4.1", "§ 3", "AB-12", "word", "-", "x", "[", "]"]


@pytest.mark.unit
@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14).map("".join),
       st.sets(st.sampled_from(["headers", "list_items", "citations"])))
def test_a_withheld_answer_stands_in_with_its_words_and_registered_style_counts(text, style):
    """Both paths' style counts (judge.numbers.biases and the second path's own patterns) and the word count of the text
    a withheld answer stands in as are the original's, for the covariates registered."""
    from judge.numbers.biases import style_counts
    from judge.verify.second_path.biases import _style

    registered = ("length", *sorted(style))
    back = stand_in(redact_answer({"text": text}, Salts(KEY), "answers.jsonl:1", registered))["text"]
    assert len(back.split()) == len(text.split())
    for c in registered:
        assert (style_counts(back)[c], _style(back, c)) == (style_counts(text)[c], _style(text, c)), (c, back)


@pytest.mark.integration
def test_no_guess_of_a_private_value_is_confirmed_by_the_bundle_and_the_team_opens_any(published):
    """The private references and questions, each withheld answer text and each original line: none of their bare
    sha256 is in the bundle (a guess of "17" or "Yes." confirms nothing), and each commitment opens with its salt."""
    exp, out, bundle, _ = published
    key = bytes.fromhex((out / "bundle.secret").read_text().strip())
    bare = [q[f] for q in QUESTIONS for f in ("question", "reference")]
    answers = (out / "answers.jsonl").read_bytes().split(b"\n")[:-1]
    bare += [json.loads(line)["text"] for line in answers if json.loads(line)["question_id"].startswith("p")]
    lines = answers + (out / "judgments.jsonl").read_bytes().split(b"\n")[:-1]
    digests = [hashlib.sha256(t.encode()).hexdigest() for t in bare] + [hashlib.sha256(x).hexdigest() for x in lines]
    for path in (p for p in bundle.rglob("*") if p.is_file()):
        data = path.read_text(encoding="utf-8", errors="replace")
        assert not [d for d in digests if d in data], path
    doc = json.loads((bundle / "BUNDLE.json").read_text())
    assert doc["version"] == 3  # version 3: bundles carry their documents' JSON Schemas
    published_rows = (bundle / "results" / "answers.jsonl").read_text().splitlines()
    for no, (line, row) in enumerate(zip(answers, published_rows, strict=True), start=1):
        assert doc["rows"]["answers.jsonl"][no - 1][0] == opened(f"answers.jsonl:{no}", line.decode(), key)
        text = json.loads(line)["text"]
        if isinstance(json.loads(row)["text"], dict):
            assert json.loads(row)["text"]["withheld"] == opened(f"answers.jsonl:{no}:text", text, key)
    r = cli("judge", "publish", str(out), "--reveal", "answers.jsonl:2:text")  # the team opens one commitment
    salt = bytes.fromhex(r.stdout.split("answers.jsonl:2:text salt ")[1].strip())
    assert hashlib.sha256(salt + json.loads(answers[1])["text"].encode()).hexdigest() == \
        json.loads(published_rows[1])["text"]["withheld"]
    for q in (json.loads(line) for line in (bundle / "questions.jsonl").read_text().splitlines()):
        want = next(x for x in QUESTIONS if x["id"] == q["id"])
        at = f"questions.jsonl:sets/exam.jsonl:{q['id']}"
        assert (q["question_sha256"], q["reference_sha256"]) == (opened(f"{at}:question", want["question"], key),
                                                                 opened(f"{at}:reference", want["reference"], key))


@pytest.mark.integration
def test_a_bundle_of_the_previous_version_still_verifies_labelled_guessable(published, tmp_path):
    """A version 1 bundle: bare sha256 for the questions (and withheld values), no gold program results."""
    exp, _, bundle, recorded = published
    old = tmp_path / "bundle"
    shutil.copytree(bundle, old)
    qpath = old / "questions.jsonl"
    rows = []
    for q in (json.loads(line) for line in qpath.read_text().splitlines()):
        want = next(x for x in QUESTIONS if x["id"] == q["id"])
        q["question_sha256"] = hashlib.sha256(want["question"].encode()).hexdigest()
        q["reference_sha256"] = hashlib.sha256(want["reference"].encode()).hexdigest()
        rows.append(q)
    qpath.write_text("".join(jsonl.dumps(r) + "\n" for r in rows))
    (old / "gold.jsonl").unlink()
    doc = json.loads((old / "BUNDLE.json").read_text())
    doc["version"] = 1
    doc.pop("gold_sha256")
    doc.pop("commitments")
    doc["questions_sha256"] = hashlib.sha256(qpath.read_bytes()).hexdigest()
    (old / "BUNDLE.json").write_text(json.dumps(doc, indent=1) + "\n")
    v = verify_bundle(old, recorded=recorded)
    assert v.problems == [] and v.anchor == recorded
    assert any(u.startswith("a bundle of the previous version (BUNDLE.json version 1): its withheld values")
               for u in v.unchecked), v.unchecked
    rows[1]["question_sha256"] = hashlib.sha256(b"another question").hexdigest()
    qpath.write_text("".join(jsonl.dumps(r) + "\n" for r in rows))
    doc["questions_sha256"] = hashlib.sha256(qpath.read_bytes()).hexdigest()
    (old / "BUNDLE.json").write_text(json.dumps(doc, indent=1) + "\n")
    team = verify_bundle(old, exp, recorded=recorded)  # the bare hashes are checked against the set as before
    assert [p.split(": field ")[1][:17] for p in team.problems] == ["'question_sha256'"], team.problems


@pytest.mark.integration
def test_the_results_folders_private_side_is_never_in_a_bundle(published, tmp_path):
    _, out, bundle, recorded = published
    assert (out / "bundle.secret").is_file() and not list(bundle.rglob("*secret*"))
    leaked = tmp_path / "bundle"
    shutil.copytree(bundle, leaked)
    shutil.copyfile(out / "bundle.secret", leaked / "results" / "bundle.secret")
    (leaked / "results" / "blinding.secret").write_text("00\n")
    problems = verify_bundle(leaked, recorded=recorded).problems
    assert [p.split(": ")[0] for p in problems] == [str(leaked / "results" / n) for n in ("blinding.secret",
                                                                                         "bundle.secret")]
    doc = json.loads((leaked / "BUNDLE.json").read_text())
    doc["files"]["bundle.secret"] = {"sha256": "0" * 64, "published": "verbatim"}
    (leaked / "BUNDLE.json").write_text(json.dumps(doc))
    with pytest.raises(BadInput) as e:
        verify_bundle(leaked)
    assert "field 'files'" in str(e.value) and "'bundle.secret'" in str(e.value)


@pytest.mark.integration
def test_a_damaged_bundle_json_is_bad_input_naming_the_field(published, tmp_path):
    _, _, bundle, _ = published
    doc = json.loads((bundle / "BUNDLE.json").read_text())
    first = next(iter(doc["rows"]))
    damages = {  # the field each names
        "files['run.json'].published": lambda d: d["files"]["run.json"].update(published="public"),
        "files['run.json'].sha256": lambda d: d["files"]["run.json"].update(sha256="not hex"),
        f"rows[{first!r}][0]": lambda d: d["rows"][first][0].append("0" * 64),
        "private['sets/exam.jsonl']": lambda d: d["private"].update({"sets/exam.jsonl": 7}),
        "gold_sha256": lambda d: d.pop("gold_sha256"),
        "version": lambda d: d.update(version=4),
        "type": lambda d: d.update(type="bundel"),
    }
    for n, (field, damage) in enumerate(damages.items()):
        damaged = tmp_path / str(n)
        shutil.copytree(bundle, damaged)
        d = json.loads(json.dumps(doc))
        damage(d)
        (damaged / "BUNDLE.json").write_text(json.dumps(d))
        with pytest.raises(BadInput) as e:
            verify_bundle(damaged)
        assert str(e.value).startswith(f"{damaged / 'BUNDLE.json'}: field '{field}': "), str(e.value)
    r = cli("judge", "verify", str(damaged))
    assert r.returncode == 2 and "BUNDLE.json" in r.stderr and "Traceback" not in r.stderr, r.stderr
