"""Registration keys renamed so that each name means one thing: an old name (a sealed prereg.toml cannot be edited)
still loads as its new one and is reported; both names in one table are refused.

Each case plants a value under a key of the demo's registration; the expected value is the planted one, read back
through the attribute the rest of the code uses.
"""
from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import BadInput
from registration.prereg import load_experiment
from registration.renamed import RENAMED
from registration.seal import seal
from registration.vocabulary import RULES

from conftest import ROOT, cli

pytestmark = pytest.mark.unit

DEMO = ROOT / "sealed" / "demo"

# (table header in the demo, old key, new key, the attribute the parsed value lands in, values to plant), written
# here from the rename table of docs/reference/registration.md, not read from the code
CASES = [
    ("[runtime]", "batch", "parallel_sequences", lambda e: e.runtime.parallel_sequences, st.integers(1, 256), 4),
    ("[models.claude]", "batch", "provider_batch", lambda e: e.models["claude"].provider_batch, st.booleans(), True),
    ("[analysis]", "rule", "decision_rule", lambda e: e.analysis.rule, st.sampled_from(RULES), "bootstrap"),
    ("[judge]", "attempts", "verdict_attempts", lambda e: e.judge_attempts, st.integers(1, 10), 3),
    ("[analysis]", "family", "family_adjustment", lambda e: e.analysis.family,
     st.sampled_from(("holm", "fixed-sequence", "none")), "none"),
]
IDS = [f"{header}-{old}" for header, old, *_ in CASES]


def toml(value) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else f'"{value}"' if isinstance(value, str) \
        else str(value)


def registered(exp: Path, header: str, lines: list[str]) -> tuple[Path, str]:
    """The demo's registration with `lines` right under `header`, and without its own lines of the keys they set;
    the file and its text."""
    text = (DEMO / "prereg.toml").read_text(encoding="utf-8")
    for key in {r.new for r in RENAMED}:
        text = re.sub(rf"(?m)^{key} = .*\n", "", text)
    assert text.count(f"\n{header}\n") == 1
    before, table = text.split(f"\n{header}\n")
    rest = table.split("\n[", 1)  # the header's own table, then the tables after it
    for key in {x.split(" = ")[0] for x in lines}:  # an old name may be a key of another table too ([models.*] family)
        rest[0] = re.sub(rf"(?m)^{key} = .*\n", "", rest[0] + "\n").rstrip("\n") if rest[0] else rest[0]
    text = f"{before}\n{header}\n" + "\n[".join(rest)
    text = text.replace(f"\n{header}\n", f"\n{header}\n" + "".join(f"{x}\n" for x in lines), 1)
    (exp / "prereg.toml").write_text(text, encoding="utf-8")
    return exp / "prereg.toml", text


def line_of(text: str, line: str) -> int:
    return text.splitlines().index(line) + 1


@pytest.fixture(scope="module")
def exp(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("renamed") / "exp"
    shutil.copytree(DEMO, d)
    return d


def test_the_cases_cover_every_renamed_key():
    assert sorted((r.table, r.old, r.new) for r in RENAMED) == sorted(
        (header.strip("[]").split(".")[0], old, new) for header, old, new, *_ in CASES)


@pytest.mark.parametrize(("header", "old", "new", "read", "values", "planted"), CASES, ids=IDS)
def test_an_old_key_loads_as_its_new_one_and_is_reported(exp, header, old, new, read, values, planted):
    @settings(max_examples=8, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
    @given(values)
    def check(value):
        file, text = registered(exp, header, [f"{new} = {toml(value)}"])
        by_new = load_experiment(exp)
        file, text = registered(exp, header, [f"{old} = {toml(value)}"])
        by_old = load_experiment(exp)
        assert read(by_old) == read(by_new) == value
        assert by_new.renamed_keys == ()
        assert replace(by_old, renamed_keys=()) == by_new  # nothing else read differently
        [notice] = by_old.renamed_keys
        assert notice.startswith(f"{file}:{line_of(text, f'{old} = {toml(value)}')}: {header} {old} is now {new} ")

    check()


@pytest.mark.parametrize(("header", "old", "new", "read", "values", "planted"), CASES, ids=IDS)
def test_both_names_in_one_table_are_refused_naming_both(exp, header, old, new, read, values, planted):
    value = toml(planted)
    file, text = registered(exp, header, [f"{new} = {value}", f"{old} = {value}"])
    with pytest.raises(BadInput) as e:
        load_experiment(exp)
    assert (e.value.file, e.value.line, e.value.field) == (str(file), line_of(text, f"{old} = {value}"), old)
    assert f"{header} registers both {old} (its old name) and {new}" in e.value.message


def test_a_bad_value_under_an_old_name_is_refused_at_that_key(exp):
    file, text = registered(exp, "[runtime]", ["batch = 0"])
    with pytest.raises(BadInput) as e:
        load_experiment(exp)
    assert (e.value.file, e.value.line, e.value.field) == (str(file), line_of(text, "batch = 0"), "batch")


def test_judge_run_prints_each_renamed_key_and_refuses_both_with_exit_2(tmp_path):
    exp = tmp_path / "exp"
    shutil.copytree(DEMO, exp)
    file, text = registered(exp, "[analysis]", ['rule = "score"'])
    seal(exp)
    r = cli("judge", "run", "--exp", str(exp), "--arms", "nosuch", "--out", str(tmp_path / "out"), "--quiet",
            timeout=120)
    assert r.returncode == 2 and "--arms names unregistered arm 'nosuch'" in r.stderr, r.stderr
    old = 'rule = "score"'
    notice = f"{file}:{line_of(text, old)}: [analysis] rule is now decision_rule"
    assert r.stderr.count(notice) == 1, r.stderr

    file, text = registered(exp, "[analysis]", ['decision_rule = "score"', 'rule = "score"'])
    seal(exp)
    r = cli("judge", "run", "--exp", str(exp), "--out", str(tmp_path / "out"), "--quiet", timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f"{file}:{line_of(text, old)}: field 'rule':" in r.stderr
    assert "rule (its old name) and decision_rule" in r.stderr
