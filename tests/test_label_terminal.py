"""`judge label` through a real terminal (a pty, driven by pexpect), on a copy of the session's small real run: a
person sees each answer exactly as the judge saw it and nothing that names its system, a score off the scale is asked
again, Ctrl-C stops, the same command resumes without asking a labelled answer again, the chain stays intact; labels
made elsewhere are imported, checked against the run; a drawn sample is recorded and every answer to its questions is
asked. Then the run's gold, through `gold_scores`: the demo's program on every answer, people's labels with their
design."""
from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import sys
import tomllib
from pathlib import Path

import numpy as np
import pexpect
import pytest

from core.errors import BadInput
from judge.gold.labelling import check_labels, import_labels
from judge.gold.sources import gold_scores
from judge.outputs.review import blind_view
from registration.prereg import load_experiment

from conftest import ROOT, cli

pytestmark = pytest.mark.integration

SCORE = re.compile(r"Score \(0, 1, 2\): ")
RULE = "-" * 72
SYSTEM = tomllib.loads((ROOT / "rubrics" / "correctness.toml").read_text())["system"].strip()


@pytest.fixture
def run(small_run, tmp_path) -> Path:
    """A private copy of the small run: labels are written into it."""
    d = tmp_path / "run"
    shutil.copytree(small_run, d)
    return d


def terminal(run: Path, *args: str) -> tuple[pexpect.spawn, io.StringIO]:
    log = io.StringIO()
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    child = pexpect.spawn(sys.executable, ["-m", "judge", "label", str(run), *args], cwd=str(ROOT), env=env,
                          encoding="utf-8", timeout=120, dimensions=(40, 200))
    child.logfile_read = log
    return child, log


def text(log: io.StringIO) -> str:
    return log.getvalue().replace("\r\n", "\n")


def score_one(child: pexpect.spawn, score: str, note: str = "") -> str:
    """Answer one item; return its label."""
    child.expect(r"\] answer (L[0-9a-f]{12})\r?\n")
    label = child.match.group(1)
    child.expect(SCORE)
    child.sendline(score)
    child.expect("Note")
    child.sendline(note)
    child.expect(f"saved: {label} = {score}")
    return label


def processes(pid: int) -> str:
    """What each process of the command is doing, from /proc: its state, where it sleeps, and its signal masks
    (pending, blocked, ignored, caught), for every thread. Printed when a Ctrl-C is not answered, as evidence."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        proc = Path(f"/proc/{p}")
        try:
            status = dict(line.split(":\t", 1) for line in (proc / "status").read_text().splitlines() if ":\t" in line)
            out.append(f"pid {p}: " + ", ".join(f"{k} {status.get(k, '?').strip()}" for k in
                                              ("Name", "State", "ShdPnd", "SigPnd", "SigBlk", "SigIgn", "SigCgt")))
            for task in sorted((proc / "task").iterdir()):
                out.append(f"  thread {task.name}: wchan {(task / 'wchan').read_text()}, "
                           f"stack {(task / 'syscall').read_text().split()[:1]}")
            todo += [int(c) for t in (proc / "task").iterdir() for c in (t / "children").read_text().split()]
        except OSError as e:
            out.append(f"pid {p}: {e}")
    return "\n".join(out)


def stop(child: pexpect.spawn) -> None:
    child.expect(SCORE)
    child.sendintr()  # Ctrl-C, through the terminal's line discipline
    try:
        child.expect("stopped")
    except pexpect.TIMEOUT:
        raise AssertionError(f"Ctrl-C not answered in {child.timeout} s:\n{processes(child.pid)}") from None
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130, (child.exitstatus, child.signalstatus)


def labels_name(run_dir: Path) -> str:
    """What labels files name a run by: the sha256 of its blinding secret, as binding.json records it."""
    return f"blinding secret sha256:{json.loads((run_dir / 'binding.json').read_text())['blinding_secret_sha256']}"


def chain_ok(path: Path, run_dir: Path) -> list[dict]:
    """The chain rule checked here, by hand: the first record's prev is the sha256 of "labels\\x1f" + the run's labels
    name, each next one's the sha256 of the canonical line of the record before it."""
    key = labels_name(run_dir)
    prev = hashlib.sha256(f"labels\x1f{key}".encode()).hexdigest()
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    for r in recs:
        assert r["prev"] == prev and r["run_key"] == hashlib.sha256(f"labels\x1f{key}".encode()).hexdigest()
        prev = hashlib.sha256(json.dumps(r, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()
                              ).hexdigest()
    return recs


def identities(run_dir: Path) -> set[str]:
    """Every name of a system or judge of the run: arms, quants, models (names, sources, families), judges."""
    run = json.loads((run_dir / "run.json").read_text())
    exp = load_experiment(Path(run["experiment_dir"]))
    keys = [json.loads(line) for line in (run_dir / "blinding.jsonl").read_text().splitlines()]
    names = {k["arm"] for k in keys} | {k["quant"] for k in keys} | set(run["arms"])
    for m in exp.models.values():
        names |= {m.name, m.source, m.source.split(":")[-1], *(x for x in (m.family,) if x)}
    names |= {j.name for j in exp.judges} | {"SmolLM2", "smollm", "llama"}
    return names


def test_label_in_a_terminal_blind_resumable_chained_and_exactly_as_the_judge_saw_it(run):
    order = [i.label for i in blind_view(run).items]  # the order judge run handed the judge the answers
    child, log = terminal(run, "--labeller", "ann")
    child.expect(r"\] answer (L[0-9a-f]{12})\r?\n")
    first = child.match.group(1)
    child.expect(SCORE)
    child.sendline("3")  # off the scale
    child.expect("'3' is not a score on the rubric's scale")
    child.expect(SCORE)
    child.sendline("two")
    child.expect("'two' is not a score")
    child.expect(SCORE)
    child.sendline("2")
    child.expect("Note")
    child.sendline("clear and right")
    child.expect(f"saved: {first} = 2")
    second = score_one(child, "0")
    stop(child)
    assert [first, second] == order[:2]
    path = run / "labels" / "ann.jsonl"
    recs = chain_ok(path, run)
    assert [(r["label"], r["score"], r["note"], r["labeller"]) for r in recs] == [
        (first, 2, "clear and right", "ann"), (second, 0, "", "ann")]
    assert len(check_labels(path, run)) == 2  # and the reader of downloaded labels files accepts it
    session1 = text(log)

    # resume: the two labelled answers are not asked again
    child, log = terminal(run, "--labeller", "ann")
    child.expect(f"{len(order)} answers, 2 already labelled, {len(order) - 2} to go")
    third = score_one(child, "1")
    assert third == order[2]
    # a label cut off mid-write (the process killed while appending): dropped on resume, its answer asked again
    stop(child)
    with open(path, "a") as f:
        f.write('{"type":"label","version":1,"label":"' + order[3])
    child, log2 = terminal(run, "--labeller", "ann")
    child.expect("dropped a label cut off while it was written")
    assert score_one(child, "2") == order[3]
    stop(child)
    recs = chain_ok(path, run)
    assert [r["label"] for r in recs] == order[:4] and len(check_labels(path, run)) == 4
    transcript = session1 + text(log) + text(log2)

    # exactly as the judge saw it: each shown prompt hashes to the prompt_sha256 the judge's verdict recorded
    assert SYSTEM in transcript
    sha = {j["label"]: j["prompt_sha256"] for j in map(json.loads, (run / "judgments.jsonl").read_text().splitlines())}
    shown = re.findall(r"\] answer (L[0-9a-f]{12})\n" + RULE + r"\n(.*?)" + RULE + "\n", transcript, re.S)
    assert list(dict.fromkeys(lab for lab, _ in shown)) == order[:5]  # each shown again only after a stop
    for lab, block in shown:
        candidates = {hashlib.sha256(json.dumps([["system", SYSTEM], ["user", u]], ensure_ascii=False).encode())
                      .hexdigest() for u in (block, block[:-1])}
        assert sha[lab] in candidates, lab

    # blind: no arm, quant, model or judge name anywhere in what the person saw
    for name in identities(run):
        assert not re.search(rf"(?i)(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", transcript), name


def write_download(path: Path, run: Path, entries: list[tuple[str, int]], labeller: str = "cy") -> Path:
    """A labels file as the blind review page downloads it (chain rule written out here)."""
    key = labels_name(run)
    rk = hashlib.sha256(f"labels\x1f{key}".encode()).hexdigest()
    prev, lines = rk, []
    for label, score in entries:
        rec = {"type": "label", "version": 1, "run_key": rk, "label": label, "score": score, "note": "",
               "labeller": labeller, "time": "2026-12-01T10:00:00.000Z", "prev": prev}
        line = json.dumps(rec, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        lines.append(line + "\n")
        prev = hashlib.sha256(line.encode()).hexdigest()
    path.write_text("".join(lines))
    return path


def test_import_accepts_labels_of_the_run_and_refuses_a_label_not_in_it_naming_file_line_and_field(run, tmp_path):
    order = [i.label for i in blind_view(run).items]
    good = write_download(tmp_path / "labels.jsonl", run, [(order[0], 2), (order[5], 1)])
    r = cli("judge", "label", str(run), "--import", str(good))
    assert r.returncode == 0, r.stderr
    assert "labels/cy.jsonl: 2 label(s) imported" in r.stdout
    assert import_labels(run, good) == {run / "labels" / "cy.jsonl": (0, 2)}  # again: nothing new, nothing refused
    assert [x["label"] for x in chain_ok(run / "labels" / "cy.jsonl", run)] == [order[0], order[5]]

    bad = write_download(tmp_path / "bad.jsonl", run, [(order[1], 2), ("L000000000000", 1)])
    r = cli("judge", "label", str(run), "--import", str(bad))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{bad}:2: field 'label'" in r.stderr and "not a blinded label" in r.stderr, r.stderr

    def refused(path: Path, labeller: str | None = None) -> tuple[str, int | None, str | None]:
        with pytest.raises(BadInput) as e:
            import_labels(run, path, labeller)
        return e.value.file, e.value.line, e.value.field

    csv = tmp_path / "labels.csv"
    csv.write_text(f"label,score,note\n{order[2]},1,\"partly, says 90\"\nL999999999999,2,\n")
    assert refused(csv, "dee") == (str(csv), 3, "label")
    csv.write_text(f"label,score,note\n{order[2]},1,\"partly, says 90\"\n{order[3]},5,\n")
    assert refused(csv, "dee") == (str(csv), 3, "score")
    assert refused(csv) == (str(csv), 2, "labeller")  # no labeller column, no --labeller
    assert not (run / "labels" / "dee.jsonl").exists()  # nothing is kept from a refused file
    csv.write_text(f"label,score,note\n{order[2]},1,\"partly, says 90\"\n")
    assert import_labels(run, csv, "dee") == {run / "labels" / "dee.jsonl": (1, 0)}
    (rec,) = chain_ok(run / "labels" / "dee.jsonl", run)
    assert (rec["label"], rec["score"], rec["note"], rec["labeller"]) == (order[2], 1, "partly, says 90", "dee")

    # a conflicting second label by the same labeller is refused, naming the line
    clash = write_download(tmp_path / "clash.jsonl", run, [(order[0], 0)])
    assert refused(clash) == (str(clash), 1, "label")


def test_a_sample_is_drawn_recorded_and_every_answer_to_its_questions_asked_then_gold_scores_reads_it_all(run):
    run_json = json.loads((run / "run.json").read_text())
    exp = load_experiment(Path(run_json["experiment_dir"]))
    # the draw, by numpy directly (judge.numbers.stats.ppi.label_sample's documented rule): 1 of the run's sorted
    # question ids; seed 1 draws q02 (in_context only, a stratum the demo's program completes)
    pool = sorted(run_json["question_ids"])
    picked = [pool[i] for i in sorted(np.random.default_rng(1).choice(len(pool), size=1, replace=False).tolist())]
    assert picked == ["q02"]
    items = blind_view(run).items
    wanted = {i.label for i in items if i.question_id in picked}
    # scores typed on standard input (a pipe, not a terminal: the same session)
    scores = "".join("1\n\n" for _ in wanted)
    r = cli_input(["judge", "label", str(run), "--labeller", "bob", "--sample", "1", "--seed", "1"], scores)
    assert r.returncode == 0, r.stderr
    (sample,) = [json.loads(x) for x in (run / "labels" / "_samples.jsonl").read_text().splitlines()]
    assert (sample["picked"], sample["seed"], sample["n"], sample["labeller"]) == (picked, 1, 1, "bob")
    assert sorted(sample["population"]) == pool
    asked = re.findall(r"\] answer (L[0-9a-f]{12})\n", r.stdout)
    assert set(asked) == wanted and len(asked) == len(wanted)  # every arm, quant and sample of the drawn question
    assert asked != sorted(asked, key=[i.label for i in items].index) or len(asked) < 3  # shuffled, not blinded order
    again = cli_input(["judge", "label", str(run), "--labeller", "bob", "--sample", "1", "--seed", "1"], "")
    assert again.returncode == 0 and "Nothing left to label" in again.stdout
    assert len((run / "labels" / "_samples.jsonl").read_text().splitlines()) == 1  # the same draw is recorded once

    g = gold_scores(exp, run)
    keys = {k["label"]: k for k in map(json.loads, (run / "blinding.jsonl").read_text().splitlines())}
    human = [s for s in g.scores if s.source == "human"]
    assert {s.label for s in human} == wanted
    # the draw is recorded on each of them; their design is the complete stratum the program makes of in_context,
    # which a complete stratum takes before a draw (a draw outside complete strata: tests/test_gold.py)
    assert all(s.design == "complete_strata" and s.stratum == "in_context" and s.draw == 0 and s.score == 1
               and s.labeller == "bob" for s in human)
    # the demo's program: one score for every answer, and it decides every one (arithmetic never 1)
    program = [s for s in g.scores if s.source == "program"]
    assert {s.label for s in program} == set(keys) and all(s.origin == "gold.py:score" for s in program)
    tags = {q: set(exp_q["tags"]) for q, exp_q in questions(exp).items()}
    for s in program:
        assert (s.arm, s.quant, s.question_id) == (keys[s.label]["arm"], keys[s.label]["quant"],
                                                   keys[s.label]["question_id"])
        assert s.status == "scored" and s.score in ((0, 2) if "arithmetic" in tags[s.question_id] else (0, 1, 2))
    arithmetic = [s for s in program if "arithmetic" in tags[s.question_id]]
    assert arithmetic, "the small run's questions include an arithmetic one"
    assert g.complete_strata == ("arithmetic", "in_context")
    # q03's tags are ["in_context", "arithmetic"]: its first complete tag is its stratum
    assert questions(exp)["q03"]["tags"] == ["in_context", "arithmetic"]
    assert {(s.design, s.stratum) for s in arithmetic} == {("complete_strata", "in_context")}


def questions(exp) -> dict[str, dict]:
    out = {}
    for p in exp.set_paths():
        for line in p.read_text().splitlines():
            q = json.loads(line)
            out[q["id"]] = q
    return out


def cli_input(args: list[str], stdin: str):
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, env=env, input=stdin, capture_output=True,
                          text=True, timeout=300)
