"""`judge view`'s page without a browser: the embedded data survives any text, and no output overwrites evidence.

The page in a real browser (review.html and its blind mode on a real run) is tests/test_review_page.py."""
from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import BadInput
from judge.__main__ import main
from judge.outputs.view import GENERATOR, render_page, writable

pytestmark = pytest.mark.unit
# the least run.json every reader reads (core.records.RunInfo): scope, deciding judge and its backend, audit gate
RUN = {"name": "r", "arms": ["a"], "question_ids": ["q"], "judge": {"primary": "j", "identity": {"backend": "b"}},
       "audit_gate": "none registered"}


class Scripts(HTMLParser):
    """Every <script> element as the HTML parser reads it: its attributes and its text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[dict, str]] = []
        self._open: dict | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self._open, self._text = dict(attrs), ""

    def handle_data(self, data):
        if self._open is not None:
            self._text += data

    def handle_endtag(self, tag):
        if tag == "script" and self._open is not None:
            self.found.append((self._open, self._text))
            self._open = None


def scripts(page: str) -> list[tuple[dict, str]]:
    p = Scripts()
    p.feed(page)
    p.close()
    return p.found


# any text, lone surrogates included, and the fragments that end a script element or change its parsing
hostile = st.one_of(st.text(), st.lists(st.sampled_from(["</script>", "</SCRIPT ", "<!--", "-->", "<script>", "&amp;",
                                                          "\u2028", "\ud800", "'", '"', "\\", "\x00", "</", "<"]))
                    .map("".join))


OPEN = '<script type="application/json" id="data">'


@settings(max_examples=100, deadline=None)
@given(hostile, st.booleans())
def test_embedded_data_reads_back_exactly_and_adds_no_script(text, blind):
    data = {"answer": text, text: [text]}
    page = render_page(data, blind)
    # as a browser reads it: the element's text runs to the first `</script` ending a tag name
    start = page.index(OPEN) + len(OPEN)
    embedded = page[start:start + re.search(r"</script[\t\n\f\r />]", page[start:], re.I).start()]
    assert json.loads(embedded) == data
    assert not set("<>&") & set(embedded) and embedded.isascii()  # no tag, comment or reference can start in it
    found = scripts(page)
    assert [attrs.get("type") for attrs, _ in found] == ["application/json", None]  # the data, the page's own code
    assert json.loads(found[0][1]) == data


def test_the_blind_page_carries_no_code_of_the_review_page():
    blind, review = render_page({}, True), render_page({}, False)
    assert "Download labels" in blind and "Download labels" not in review
    assert "Arm pair" in review and "Arm pair" not in blind


def test_an_existing_file_is_overwritten_only_if_it_is_a_page_judge_view_wrote(tmp_path):
    page = tmp_path / "review.html"
    page.write_text(render_page({}, False))
    assert writable(page) == page
    for name, content in (("answers.jsonl", '{"row": "x"}\n'), ("run.json", "{}"), ("report.md", "# r\n"),
                          ("notes.html", "<html>mine</html>")):
        (tmp_path / name).write_text(content)
        with pytest.raises(BadInput) as e:
            writable(tmp_path / name)
        assert e.value.file == str(tmp_path / name) and "refusing to overwrite" in e.value.message
    with pytest.raises(BadInput):
        writable(tmp_path)
    assert f'<meta name="generator" content="{GENERATOR}">' in page.read_text()


def test_view_refuses_to_write_over_a_raw_file_before_reading_anything(tmp_path, capsys):
    (tmp_path / "judgments.jsonl").write_text('{"judge": "x"}\n')
    before = (tmp_path / "judgments.jsonl").read_bytes()
    assert main(["view", str(tmp_path), "--out", str(tmp_path / "judgments.jsonl")]) == 2
    assert f"{tmp_path / 'judgments.jsonl'}:" in capsys.readouterr().err
    assert (tmp_path / "judgments.jsonl").read_bytes() == before


@pytest.mark.parametrize("make, named", [
    (lambda d: None, ""),  # no folder at all
    (lambda d: d.mkdir(), "run.json"),
    (lambda d: (d.mkdir(), (d / "run.json").write_text("{not json")), "run.json"),
    (lambda d: (d.mkdir(), (d / "run.json").write_text("{}"), *[(d / f).write_text("") for f in
                ("answers.jsonl", "blinding.jsonl", "judgments.jsonl")]), "run.json"),
    (lambda d: (d.mkdir(), (d / "run.json").write_text(json.dumps({**RUN, "experiment_dir": "x"}))), "answers.jsonl"),
])
@pytest.mark.parametrize("blind", [False, True])
def test_a_bad_results_folder_exits_2_naming_the_file(tmp_path, capsys, make, named, blind):
    run = tmp_path / "run"
    make(run)
    assert main(["view", str(run), *(["--blind"] if blind else [])]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {run / named}".rstrip("/")) and "Traceback" not in err, err


@pytest.mark.parametrize("field, value", [("name", 3), ("arms", "base"), ("arms[0]", 1), ("question_ids", None),
                                          ("judge", "local"), ("experiment_dir", None)])
def test_a_run_json_field_of_the_wrong_type_exits_2_naming_it(tmp_path, capsys, field, value):
    run = {**RUN, "experiment_dir": str(tmp_path)}
    if field == "arms[0]":
        run["arms"] = [value]
    (tmp_path / "run.json").write_text(json.dumps(run if field == "arms[0]" else {**run, field: value}))
    for name in ("answers.jsonl", "blinding.jsonl", "judgments.jsonl"):
        (tmp_path / name).write_text("")
    assert main(["view", str(tmp_path), "--blind"]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'run.json'}: field '{field}':" in err and "Traceback" not in err, err


def test_each_answer_carries_its_gold_and_a_row_is_gold_available_only_with_a_gold_score():
    """review.html's data from a planted review: an answer's gold is the mean and count of its scored gold (by hand:
    (2 + 1) / 2), with every score; a question whose answers have no gold score (none, or only a program's
    undecided) is not `gold available`."""
    from test_review_md import answer, gold, no_decisions, run_record, verdict

    from judge.outputs.review import HypothesisPairs, Pair, Review
    from judge.outputs.view import review_data
    from registration.questions import Question

    planted = {"q1": (gold("Lq1b", "program", "gold.py:score", 2),
                      gold("Lq1b", "human", "labels/ann.jsonl:3", 1, note="unsure")),
               "q2": (gold("Lq2b", "program", "gold.py:score", None, "undecided"),),
               "q3": ()}
    pairs = []
    for qid, golds in planted.items():
        q = Question(qid, "question?", None, (), None, "exam.jsonl", 1)
        a = answer("base", qid, f"L{qid}a", "a", (verdict("j", f"L{qid}a", qid, 1),))
        b = answer("trained", qid, f"L{qid}b", "b", (verdict("j", f"L{qid}b", qid, 2),), gold=golds)
        pairs.append(Pair("H1", q, (a,), (b,)))
    r = Review(run_record("j"), no_decisions(), ("j",), (0, 1, 2),
               (HypothesisPairs("H1", "", "base", "trained", "Q8_0", (), tuple(pairs)),))
    data = review_data(r)
    assert {row["question"]: row["gold"] for row in data["rows"]} == {"q1": True, "q2": False, "q3": False}
    got = {a["label"]: a["gold"] for a in data["answers"].values()}
    assert got["Lq1b"] == {"mean": 1.5, "count": 2, "sources": ["program", "human"], "scores": [
        {"source": "program", "origin": "gold.py:score", "labeller": "gold.py:score", "score": 2, "status": "scored",
         "error": None, "note": ""},
        {"source": "human", "origin": "labels/ann.jsonl:3", "labeller": "labels/ann.jsonl:3", "score": 1,
         "status": "scored", "error": None, "note": "unsure"}]}
    assert got["Lq2b"]["count"] == 0 and got["Lq2b"]["mean"] is None and got["Lq2b"]["scores"][0]["status"] == \
        "undecided"
    assert got["Lq3b"] is None and all(got[f"L{q}a"] is None for q in planted)
