"""review.html in a real browser: Debian's headless Chromium (/usr/bin/chromium) driven by Playwright, on the session's
small real run. Nothing downloads a browser: Playwright launches the system's executable, and CI installs it
(.ci/run). Every expected value is computed here from the raw files and numbers.json, not by judge.outputs.review."""
from __future__ import annotations

import csv
import hashlib
import json
import random
import re
import shutil
import tomllib
from collections import defaultdict
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import jsonl
from core.errors import run_cli
from judge.gold.labelling import check_labels
from judge.judging.blinding import scrub
from judge.outputs.view import view
from registration.prereg import load_experiment
from registration.questions import load_questions

from conftest import cli

pytestmark = pytest.mark.integration

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
HOSTILE = '</script><script>alert(1)</script><img src=x onerror="alert(2)"><b>bold</b> & &amp; <!-- "q" \u2028 end'


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(f"Debian's chromium is not installed ({CHROMIUM}): .ci/run installs it (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


@contextmanager
def opened(browser, page_file: Path):
    """The page from its file URL, and every problem it shows: a console error, an uncaught error, a dialog (an
    alert an answer smuggled in), a request to anything but the file itself."""
    context = browser.new_context(accept_downloads=True, viewport={"width": 1200, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"uncaught: {e}"))
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    page.on("request", lambda r: None if r.url.startswith(("file:", "data:", "blob:")) else problems.append(r.url))
    page.goto(page_file.as_uri())
    page.wait_for_load_state("load")
    try:
        yield page, problems
    finally:
        context.close()


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def expected(run_dir: Path, a: str, b: str, quant: str) -> dict[str, Fraction | None]:
    """Question -> b − a by the primary judge (mean of each arm's scored samples), None where an arm has no score."""
    run = json.loads((run_dir / "run.json").read_text())
    keys = {r["label"]: r for r in records(run_dir / "blinding.jsonl") if "hypothesis" not in r}
    last = {r["label"]: r for r in records(run_dir / "judgments.jsonl")  # a key's last record is its current one
            if r["judge"] == run["judge"]["primary"] and r["label"].startswith("L")}
    scores = defaultdict(list)
    for label, v in last.items():
        if v["status"] == "scored":
            k = keys[label]
            scores[(k["arm"], k["quant"], k["question_id"])].append(v["score"])
    mean = {cell: Fraction(sum(s), len(s)) for cell, s in scores.items()}
    return {q: (mean[(b, quant, q)] - mean[(a, quant, q)] if (a, quant, q) in mean and (b, quant, q) in mean else None)
            for q in run["question_ids"]}


def shown_rows(page) -> list[tuple[str, str, str]]:
    return [(d.get_attribute("data-hypothesis"), d.get_attribute("data-question"), d.get_attribute("data-difference"))
            for d in page.locator("details.pair").all()]


def tags(run_dir: Path) -> dict[str, list[str]]:
    run = json.loads((run_dir / "run.json").read_text())
    exp = tomllib.loads((Path(run["experiment_dir"]) / "prereg.toml").read_text())
    return {r["id"]: r.get("tags", []) for s in exp["experiment"]["sets"]
            for r in records(Path(run["experiment_dir"]) / s)}


def test_the_review_page_loads_offline_and_shows_the_rows_of_numbers_json(small_run, browser, tmp_path):
    r = cli("judge", "view", str(small_run), "--out", str(tmp_path / "review.html"))
    assert r.returncode == 0, r.stderr
    numbers = json.loads((small_run / "numbers.json").read_text())
    h = next(c for c in numbers["comparisons"] if c["id"] == "H1-Q8_0")
    want = expected(small_run, h["a"], h["b"], h["quant"])
    qtags = tags(small_run)
    anchored = ("binding.json", "run.json", "answers.jsonl", "blinding.jsonl", "judgments.jsonl", "numbers.json")
    listing = "".join(f"{hashlib.sha256((small_run / n).read_bytes()).hexdigest()}  {n}\n" for n in anchored)
    with opened(browser, tmp_path / "review.html") as (page, problems):
        # the header names the folder's anchor (sha256sum of the six files, by hand), never an empty digest
        assert f"Anchor {hashlib.sha256(listing.encode()).hexdigest()}." in page.inner_text("body")
        assert [row.get_attribute("data-hypothesis") for row in page.locator("tr.decision").all()] == \
            [c["id"] for c in numbers["comparisons"]]
        # stability across samples: one row per cell of numbers.json, pass^k as numbers.json gives it
        cells = numbers["stability"]["cells"]
        assert [row.get_attribute("data-cell") for row in page.locator("tr.stability").all()] == \
            [f"{c['arm']}/{c['quant']}" for c in cells]
        first = page.locator("tr.stability").first.locator("td").all_inner_texts()
        c, e = cells[0], cells[0]["pass_hat_k"]
        assert first[:6] == [c["arm"], c["quant"], str(c["k"]), str(c["questions"]), str(c["incomplete"]),
                             f"{e['estimate']:.3f} [{e['ci_low']:.3f}, {e['ci_high']:.3f}]"]
        # it opens, as report.md does, with the summary: the report's first section, its bullets without the bold
        report = (small_run / "report.md").read_text().split("\n## ")
        assert report[1].startswith("Summary\n\n") and page.locator("h2").first.inner_text() == "Summary"
        bullets = [line[2:].replace("**", "") for line in report[1].splitlines() if line.startswith("- ")]
        assert len(bullets) == len(numbers["comparisons"]) + 1
        assert [li.inner_text() for li in page.locator("#decision-summary li").all()] == bullets
        # filter 1: the arm pair and the quant of H1-Q8_0
        page.select_option("#f-pair", label=f"{h['a']} → {h['b']}")
        page.select_option("#f-quant", h["quant"])
        rows = shown_rows(page)
        assert [q for _, q, _ in rows] == list(want) and {x for x, _, _ in rows} == {"H1-Q8_0"}
        for _, q, d in rows:
            assert (d == "") if want[q] is None else float(d) == pytest.approx(float(want[q]), abs=1e-12), q
        assert [q for _, q, d in rows if d != ""] == h["paired_questions"]
        assert f"mean difference b − a {h['result']['diff']:+.3f}".replace("+0.000", "0.000") in \
            page.inner_text("#summary")
        page.locator("details.pair").first.click()
        page.locator("details.pair >> nth=0 >> details.attempts").first.click()
        page.locator("#filters").scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / "review-page.png"))
        # filter 2: and a question tag; numbers.json's subset analysis of that tag paired the same questions
        page.select_option("#f-tag", "arithmetic")
        rows = shown_rows(page)
        assert [q for _, q, _ in rows] == [q for q in want if "arithmetic" in qtags[q]]
        subset = next(s for s in numbers["subsets"] if s["id"] == "H1-Q8_0 [arithmetic]")
        assert [q for _, q, d in rows if d != ""] == subset["paired_questions"]
        assert problems == []
    assert (tmp_path / "review-page.png").stat().st_size > 10_000


def test_differences_sorting_and_the_unscored_filter_on_planted_scores(small_run, browser, tmp_path):
    """The small run's tiny judge scores nearly everything alike; planted scores make every difference count."""
    run = tmp_path / "run"
    shutil.copytree(small_run, run, ignore=shutil.ignore_patterns("*.html", "run.lock"))
    original = records(run / "judgments.jsonl")
    exp_dir = Path(json.loads((run / "run.json").read_text())["experiment_dir"])
    qtags = tags(run)
    # the labels are random per folder, so the first shift of the planted scores that gives at least three distinct
    # differences and an unscored one is taken: planted deterministically from this folder, never left to chance
    for shift in range(30):
        verdicts = [dict(v) for v in original]
        for i, v in enumerate(verdicts):
            if i % 7:
                v.update(status="scored", score=(int(v["label"][1:], 16) + shift * i) % 3)
            else:
                v.update(status="unscored", score=None)
        (run / "judgments.jsonl").write_text("".join(jsonl.dumps(v) + "\n" for v in verdicts))
        want = {(h["id"], q): d for h in tomllib.loads((exp_dir / "prereg.toml").read_text())["hypotheses"]
                for q, d in expected(run, h["a"], h["b"], h["quant"]).items()
                if all(t in qtags[q] for t in h.get("subset", []))}
        if len({d for d in want.values() if d is not None}) > 2 and None in want.values():
            break
    assert len({d for d in want.values() if d is not None}) > 2 and None in want.values()  # the plant took
    with opened(browser, view(run)) as (page, problems):
        page.select_option("#f-sort", "desc")
        rows = shown_rows(page)
        assert sorted((x, q) for x, q, _ in rows) == sorted(want)
        assert all((d == "") if want[(x, q)] is None else float(d) == pytest.approx(float(want[(x, q)]))
                   for x, q, d in rows)
        paired = [float(d) for _, _, d in rows if d != ""]
        assert paired == sorted(paired, reverse=True) and all(d == "" for _, _, d in rows[len(paired):])
        page.select_option("#f-sort", "abs")
        sizes = [abs(float(d)) for _, _, d in shown_rows(page) if d != ""]
        assert sizes == sorted(sizes, reverse=True)
        page.check("#f-unscored")
        assert sorted((x, q) for x, q, _ in shown_rows(page)) == sorted(k for k, d in want.items() if d is None)
        assert problems == []


def plant(run_dir: Path, out: Path) -> tuple[Path, str]:
    """A copy of the run in which one answer, and its judge's raw reply, are hostile HTML; its label."""
    shutil.copytree(run_dir, out, ignore=shutil.ignore_patterns("*.html", "run.lock"))
    answers = records(out / "answers.jsonl")
    target = next(a for a in answers if (a["arm"], a["quant"], a["question_id"]) == ("base", "Q8_0", "q01"))
    target.update(text=HOSTILE, raw_output=HOSTILE)
    (out / "answers.jsonl").write_text("".join(jsonl.dumps(a) + "\n" for a in answers))
    label = next(k["label"] for k in records(out / "blinding.jsonl") if k.get("row") == target["row"])
    verdicts = records(out / "judgments.jsonl")
    for v in verdicts:
        if v["label"] == label:
            v["attempts"][0]["raw"] = HOSTILE
    (out / "judgments.jsonl").write_text("".join(jsonl.dumps(v) + "\n" for v in verdicts))
    return out, label


def test_an_answer_a_judge_reply_and_a_labellers_note_of_html_render_as_text(small_run, browser, tmp_path):
    run, label = plant(small_run, tmp_path / "run")
    with (tmp_path / "labels.csv").open("w", newline="", encoding="utf-8") as f:  # a person's label, its note hostile
        csv.writer(f).writerows([["label", "score", "labeller", "note"], [label, 1, "ann", HOSTILE]])
    r = cli("judge", "label", str(run), "--import", str(tmp_path / "labels.csv"))
    assert r.returncode == 0, r.stderr
    with opened(browser, view(run)) as (page, problems):
        page.select_option("#f-hyp", "H1-Q8_0")
        page.locator("details.pair[data-question=q01]").click()
        card = page.locator(f"#rows .answer[data-label={label}]")
        card.locator("details.attempts").click()
        assert card.locator(".text").first.text_content() == HOSTILE
        assert card.locator("details.attempts .text").first.text_content() == HOSTILE
        assert card.locator(".gold").text_content().endswith(f"(human labels/ann.jsonl:1) note: {HOSTILE}")
        assert page.evaluate("document.scripts.length") == 2  # the data and the page's own code, nothing planted
        assert page.locator("#rows b, #rows img, #rows script").count() == 0
        assert problems == []
    exp = load_experiment(Path(json.loads((run / "run.json").read_text())["experiment_dir"]))
    with opened(browser, view(run, blind=True)) as (page, problems):
        assert page.locator(f".item[data-label={label}] .text").text_content() == scrub(HOSTILE, exp.scrub)[0]
        assert page.evaluate("document.scripts.length") == 2
        assert page.locator("main b, main img").count() == 0
        assert problems == []


def identities(run_dir: Path) -> set[str]:
    """Everything that names a system: arms, quants, models (keys, sources, families, file hashes), adapters, judges,
    the run's name and folder, its label key and the key derived from it, and the folder's blinding secret."""
    run = json.loads((run_dir / "run.json").read_text())
    exp = tomllib.loads((Path(run["experiment_dir"]) / "prereg.toml").read_text())
    out = {run["name"], run["experiment_dir"], run["label_key"], hashlib.sha256(run["label_key"].encode()).hexdigest(),
           (run_dir / "blinding.secret").read_text().strip()}
    for arm in exp["arms"]:
        out |= {arm["name"], arm["model"], *arm["quants"]}
    for name, m in exp["models"].items():
        out |= {name, m["source"], m.get("family", name)}
    for name, a in exp.get("adapters", {}).items():
        out |= {name, a["source"]}
    for name, j in exp["judges"].items():
        out |= {name, j["model"], *([j["quant"]] if "quant" in j else [])}
    for a in records(run_dir / "answers.jsonl"):
        out |= {x for x in (a.get("model_sha256"), a.get("lora_sha256"), a["arm"], a["quant"]) if x}
    for ident in run["judge"]["identities"].values():
        out |= {v for v in ident.values() if isinstance(v, str) and len(v) > 8}
    return out


def named(text: str, names: set[str]) -> list[str]:
    """The names that occur in `text` as words of their own (a hyphen joins words: `base-uri` is not `base`)."""
    return sorted(n for n in names if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text, re.I))


def test_the_blind_page_names_no_arm_model_quant_or_judge_and_keeps_the_judges_order(small_run, browser, tmp_path):
    page_file = view(small_run, blind=True, out=tmp_path / "blind.html")
    run = json.loads((small_run / "run.json").read_text())
    names = identities(small_run)
    exp = load_experiment(Path(run["experiment_dir"]))
    questions = {q_id: r for q_id, r in ((r["id"], r) for s in exp.set_paths() for r in records(s))}
    texts = {a["row"]: a["text"] for a in records(small_run / "answers.jsonl")}
    row_of = {k["label"]: k["row"] for k in records(small_run / "blinding.jsonl")}
    html = page_file.read_text()
    data_text = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S).group(1)
    data = json.loads(data_text)
    # what the judge saw, checked against the raw files: each answer as scrubbed for the judge, the sealed question
    seen: set[str] = set()
    for item in data["items"]:
        q = questions[item["question_id"]]
        assert item["answer"] == scrub(texts[row_of[item["label"]]], exp.scrub)[0]
        assert (item["question"], item["reference"]) == (q["question"], q.get("reference"))
        seen |= {item["answer"], item["question"], item["reference"] or ""}
    # in the blinded order, drawn here as judge run draws it: the questions shuffled by the registered seed, then
    # each question's labels (sorted) shuffled
    by_q = defaultdict(list)
    for k in records(small_run / "blinding.jsonl"):
        by_q[k["question_id"]].append(k["label"])
    rng = random.Random(tomllib.loads((Path(run["experiment_dir"]) / "prereg.toml").read_text())["experiment"]["seed"])
    blinded = sorted(by_q)
    rng.shuffle(blinded)
    want = []
    for q in blinded:
        group = sorted(by_q[q])
        rng.shuffle(group)
        want += group
    assert [i["label"] for i in data["items"]] == want
    # which is the order the judge read them in: its verdicts were written so, answers it was shown twice (the
    # same text to the same question) judged one after the other
    written = list(dict.fromkeys(j["label"] for j in records(small_run / "judgments.jsonl")
                                 if j["judge"] == run["judge"]["primary"] and j["label"].startswith("L")))
    same = defaultdict(list)
    for i in data["items"]:
        same[(i["question_id"], i["answer"])].append(i["label"])
    assert [label for labels in same.values() for label in labels] == written
    # the data holds nothing else that could name a system
    rest = {**data, "items": [{k: v for k, v in i.items() if k not in ("answer", "question", "reference")}
                              for i in data["items"]]}
    assert named(json.dumps(rest), names) == []
    assert named(html.replace(data_text, ""), names) == []
    with opened(browser, page_file) as (page, problems):
        dom = page.evaluate("""() => {
            const out = [];
            const walk = document.createTreeWalker(document.documentElement, NodeFilter.SHOW_TEXT);
            for (let n = walk.nextNode(); n; n = walk.nextNode()) if (n.parentElement.id !== "data") out.push(n.data);
            for (const e of document.querySelectorAll("*")) for (const a of e.attributes) out.push(a.value);
            out.push(document.title);
            return out;
        }""")
        assert page.locator(".item").count() == len(data["items"])
        assert problems == []
    assert named("\n".join(t for t in dom if t not in seen), names) == []
    # nor any gold score, though the demo's program gives some of these answers one: the page is for labelling, and a
    # gold score beside an answer would anchor the person labelling it
    assert "gold" not in json.dumps(rest).lower() and [t for t in dom if t not in seen and "gold" in t.lower()] == []
    # the names are really there to be found: the review page of the same run shows them
    review = view(small_run, out=tmp_path / "review.html").read_text()
    assert set(run["arms"]) <= set(named(review, names))


NOTES = ['said "yes" \\ no', "two\nlines\tand a tab", "a bike 🚲, a separator \u2028 and \x07", HOSTILE, ""]


def test_a_labels_download_round_trips_through_the_checker(small_run, browser, tmp_path, capsys):
    page_file = view(small_run, blind=True, out=tmp_path / "blind.html")
    with opened(browser, page_file) as (page, problems):
        labels = [x.get_attribute("data-label") for x in page.locator(".item").all()][:len(NOTES)]
        scale = json.loads(page.locator("#data").text_content())["scale"]
        page.fill("#labeller", "Ann O'Tator")
        entered = []
        for i, (label, note) in enumerate(zip(labels, NOTES, strict=True)):
            score = scale[i % len(scale)]
            page.locator(f".item[data-label={label}] textarea.note").fill(note)
            page.check(f'input[name="score-{label}"][value="{score}"]')
            entered.append((label, score, note))
        assert page.inner_text("#progress").startswith(f"{len(NOTES)} of ")
        with page.expect_download() as d:
            page.click("#download")
        path = tmp_path / "labels.jsonl"
        d.value.save_as(path)
        assert problems == []
    got = check_labels(path, small_run)
    assert [(g.label, g.score, g.note) for g in got] == entered and {g.labeller for g in got} == {"Ann O'Tator"}
    # a label that is not one of this run's is refused, naming the file, the line and the field
    lines = path.read_text().splitlines(keepends=True)
    lines[1] = lines[1].replace(labels[1], "L000000000000")
    (tmp_path / "foreign.jsonl").write_text("".join(lines))
    assert run_cli(lambda: check_labels(tmp_path / "foreign.jsonl", small_run)) == 2
    assert f"{tmp_path / 'foreign.jsonl'}:2: field 'label':" in capsys.readouterr().err


plain = st.text(st.characters(exclude_categories=("Cs",)), max_size=150)
values = st.one_of(plain, st.integers(-(2**53) + 1, 2**53 - 1), st.booleans(), st.none())


def test_the_pages_chain_rule_is_arms_jsonl_link(small_run, browser, tmp_path):
    """The page writes each record's `prev` with its own canonical JSON and SHA-256: for any record they must be
    core.jsonl.dumps and core.jsonl.link, or a labels file would not chain where the checker reads it."""
    with opened(browser, view(small_run, blind=True, out=tmp_path / "blind.html")) as (page, problems):
        @settings(max_examples=80, deadline=None)
        @given(st.dictionaries(st.text(st.characters(exclude_categories=("Cs",)), max_size=8), values, max_size=6))
        def same(rec):
            assert page.evaluate("r => [canonical(r), sha256(canonical(r))]", rec) == [jsonl.dumps(rec),
                                                                                      jsonl.link(rec)]

        same()
        for n in (0, 1, 55, 56, 63, 64, 65, 119, 120, 1000):  # the SHA-256 padding's block boundaries, in bytes
            assert page.evaluate("t => sha256(t)", "a" * n) == hashlib.sha256(b"a" * n).hexdigest()
        assert problems == []


def test_the_demo_programs_gold_is_on_every_answer_and_the_gold_filter_keeps_the_questions_with_gold(small_run,
                                                                                                   browser, tmp_path):
    """The demo's gold program decides every answer (its docstring's promise, checked here by calling its source on
    each answer as the judge read it): every answer shows its score. On a copy of the run whose experiment's program
    is planted to leave q01 undecided, q01's answers show none and the `gold available` filter keeps exactly the
    other questions."""
    from test_review_md import _demo_gold

    from registration.seal import seal

    program = _demo_gold()
    qtags = tags(small_run)
    run = json.loads((small_run / "run.json").read_text())
    exp = load_experiment(Path(run["experiment_dir"]))
    questions = {q.id: q for q in load_questions(exp.set_paths())}
    # the plant: the demo's program, but None on q01 (an experiment of its own, sealed; the run points at it)
    planted_exp, planted = tmp_path / "exp", tmp_path / "run"
    shutil.copytree(exp.dir, planted_exp)
    (planted_exp / "gold.py").write_text((exp.dir / "gold.py").read_text() + (
        "\n\n_decides = score\n\n\ndef score(question, reference, answer):\n"
        "    return None if question.id == 'q01' else _decides(question, reference, answer)\n"))
    seal(planted_exp)
    shutil.copytree(small_run, planted, ignore=shutil.ignore_patterns("*.html", "run.lock"))
    (planted / "run.json").write_text(json.dumps(run | {"experiment_dir": str(planted_exp)}))
    assert "q01" in qtags and len(qtags) > 1
    for run_dir, undecided in ((small_run, set()), (planted, {"q01"})):
        page_file = view(run_dir, out=tmp_path / f"review-{run_dir.name}.html")
        data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>',
                                    page_file.read_text(), re.S).group(1))
        want: dict[str, int | None] = {}
        for row in data["rows"]:
            q = questions[row["question"]]
            for rid in row["a"] + row["b"]:
                a = data["answers"][rid]
                got = None if q.id in undecided else program(q, q.reference,
                                                             a["shown"] if a["shown"] is not None else a["text"])
                assert (got is None) == (q.id in undecided) and (got is None or got in (0, 1, 2)), (q.id, got)
                want[a["label"]] = got
                if got is None:
                    assert a["gold"]["count"] == 0 and a["gold"]["mean"] is None, a["gold"]
                else:
                    assert (a["gold"]["count"], a["gold"]["mean"], a["gold"]["sources"]) == (1, got, ["program"])
        assert {v is None for v in want.values()} == ({True, False} if undecided else {False})  # the plant took
        with_gold = sorted({(r["hypothesis"], r["question"]) for r in data["rows"] if r["question"] not in undecided})
        with opened(browser, page_file) as (page, problems):
            page.check("#f-gold")
            assert sorted((h, q) for h, q, _ in shown_rows(page)) == with_gold
            first = page.locator("details.pair").first
            first.click()
            for card in first.locator(".answer").all():
                g = want[card.get_attribute("data-label")]
                assert card.locator(".gold").text_content().startswith(f"gold: {g} (program)"), g
            assert problems == []


def test_each_tables_help_is_its_fields_description_in_the_schema_the_contracts_emit(small_run, browser, tmp_path):
    """The headers' help (their title) is the description docs/reference/schemas/ publishes for the fields they show,
    the contracts' own comments: `margin` is planted here as core/records/comparisons.py words it."""
    r = cli("judge", "view", str(small_run), "--out", str(tmp_path / "review.html"))
    assert r.returncode == 0, r.stderr
    schemas = Path(__file__).parent.parent / "docs" / "reference" / "schemas"
    numbers = json.loads((schemas / "numbers.schema.json").read_text())["$defs"]
    run = json.loads((schemas / "run.schema.json").read_text())

    def said(section: dict, *fields: str) -> str:
        return "; ".join(section["properties"][f]["description"] for f in fields)

    c, res, cell = numbers["Comparison"], numbers["Result"], numbers["StabilityCell"]
    assert said(c, "margin") == "the registered margin, in rubric points"
    with opened(browser, tmp_path / "review.html") as (page, problems):
        titles = {th.inner_text(): th.get_attribute("title") for th in page.locator("#decisions th").all()}
        assert titles == {"Hypothesis": said(c, "id", "text"), "Compares": said(c, "b", "a"),
                          "Quant": said(c, "quant"), "Kind": said(c, "kind"), "Margin": said(c, "margin"),
                          "n": said(res, "n"), "Difference b − a": said(res, "diff"),
                          "Interval": said(res, "ci_low", "ci_high"), "Decision": said(c, "verdict"),
                          "Why": said(c, "reason"), "": None}
        stability = {th.inner_text(): th.get_attribute("title") for th in page.locator("#stability th").all()}
        assert stability["K"] == said(cell, "k") and stability["pass^k"] == said(cell, "pass_hat_k")
        assert page.locator("h1").get_attribute("title") == said(run, "name")
        assert problems == []
