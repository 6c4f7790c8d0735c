"""`python -m audit rewards`: telemetry on a synthetic log in the shape of docs/reward-telemetry.md,
and on the shipped demo log."""
from __future__ import annotations

import importlib.util
import json
import statistics

import pytest

from conftest import ROOT, cli

pytestmark = pytest.mark.integration

DATA = ROOT / "tests" / "data" / "audit"
RUN1 = ROOT / "sealed" / "demo" / "training" / "run1.jsonl"
_spec = importlib.util.spec_from_file_location("ticket_log", DATA / "ticket_log.py")
ticket = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ticket)


def rewards(log, out, *args):
    r = cli("audit", "rewards", str(log), "--out", str(out), "--quiet", *args)
    numbers = json.loads((out / "numbers.json").read_text()) if (out / "numbers.json").exists() else None
    return r, numbers


@pytest.fixture(scope="module")
def tickets(tmp_path_factory):
    rows = ticket.rows()
    return rows, ticket.write_jsonl(tmp_path_factory.mktemp("log") / "tickets.jsonl", rows)


def test_parse_failures_match_zero_scores_step_by_step_as_in_seed_000(tickets, tmp_path):
    rows, log = tickets
    r, n = rewards(log, tmp_path / "out", "--zero-of", "quality")
    assert r.returncode == 0, r.stderr
    win = n["parse"]["window"]
    assert win["steps"] == list(range(18, 30))  # the run of steps with zeros (19-28), one step either side
    planted = [ticket.FAILURES.get(s, 0) for s in win["steps"]]
    assert win["parse_failures"] == win["zero_scores"] == planted and win["identical"]
    assert n["parse"]["identical_steps"] == n["parse"]["steps"] == ticket.STEPS
    assert n["parse"]["errors"][0]["error"].startswith("JSONDecodeError: Invalid control character")
    md = (tmp_path / "out" / "report.md").read_text()
    for name in ("parse failures", "zero scores"):
        assert f"| {name} | " + " | ".join(map(str, planted)) + " |" in md
    for chart in ("components.png", "collapse.png"):
        assert (tmp_path / "out" / chart).read_bytes()[:4] == b"\x89PNG"

    # an importable parse function: plain json.loads rejects the ```json fenced answers, which scored fine
    r, strict = rewards(log, tmp_path / "strict", "--zero-of", "quality", "--parse", "json:loads")
    assert r.returncode == 0, r.stderr
    t = strict["parse"]["totals"]
    assert t["failed_nonzero"] == len(ticket.FENCED) and t["parse_failures"] == t["zero_scores"] + len(ticket.FENCED)


def _mean(rows, name, steps):
    return statistics.fmean(r["reward"] if name == "reward" else r["components"][name]
                            for r in rows if r["step"] in steps)


def test_window_table_has_seed_002_shape_from_jsonl_and_mapped_csv(tickets, tmp_path):
    rows, log = tickets
    csv_log = ticket.write_csv(tmp_path / "tickets.csv", rows)
    mapping = tmp_path / "columns.toml"
    mapping.write_text('[columns]\nstep = "global_step"\nprompt_id = "ticket"\ncompletion_id = "id"\nprompt = "query"\n'
                       'completion = "text"\nreward = "total"\ncomponents = "rewards/*"\nadvantage = "adv"\n')
    r, n = rewards(log, tmp_path / "j", "--window", "5")
    assert r.returncode == 0, r.stderr
    r, c = rewards(csv_log, tmp_path / "c", "--window", "5", "--columns", str(mapping))
    assert r.returncode == 0, r.stderr
    w = n["windows"]
    assert (w["first_steps"], w["last_steps"]) == ([1, 5], [26, 30])
    assert [row["component"] for row in w["rows"]] == ["reward", *ticket.COMPONENTS]
    for row in w["rows"]:
        first, last = _mean(rows, row["component"], range(1, 6)), _mean(rows, row["component"], range(26, 31))
        assert row["first"] == pytest.approx(first, abs=1e-4) and row["last"] == pytest.approx(last, abs=1e-4)
        assert row["delta"] == pytest.approx(last - first, abs=2e-4)
    md = (tmp_path / "j" / "report.md").read_text()
    assert "| Reward component | Steps 1–5 | Steps 26–30 | Δ |" in md
    q = next(row for row in w["rows"] if row["component"] == "quality")
    assert f"| quality | {q['first']:.3f} | {q['last']:.3f} | {q['delta']:+.3f} |" in md
    flat = [(g["step"], g["n"]) for g in n["zero_variance"]["list"]]
    assert flat == [(s, ticket.GROUP) for s in sorted(ticket.ZERO_VARIANCE)]

    # the CSV (other column names, flat rewards/<name> columns) gives the same numbers
    assert c["input"]["components"] == [f"rewards/{x}" for x in sorted(ticket.COMPONENTS)]
    by_name = {row["component"].removeprefix("rewards/"): dict(row, component=None) for row in c["windows"]["rows"]}
    assert by_name == {row["component"]: dict(row, component=None) for row in w["rows"]}
    assert c["zero_variance"] == n["zero_variance"] and c["parse"]["totals"] == n["parse"]["totals"]


def test_hack_signatures(tickets, tmp_path):
    rows, log = tickets
    r, n = rewards(log, tmp_path / "out", "--form", "parsimony", "--correctness", "quality", "--low", "0.2")
    assert r.returncode == 0, r.stderr
    s = n["signatures"]
    low = [x for x in rows if x["components"]["quality"] <= 0.2]
    hacked = [x for x in low if x["components"]["parsimony"] >= 0.9]
    assert s["form_high_correctness_low"]["count"] == len(hacked) > 0
    assert s["advantage_low_quality"]["count"] == sum(x["advantage"] > 1.0 for x in low)
    habit = s["habitual_constant"]["low_correctness"]
    assert habit["literal"] == "0.85"
    assert habit["count"] == sum("0.85" in x["completion"] for x in low)


def test_fidelity_gate_regrades_stored_completions(tickets, tmp_path):
    rows, log = tickets
    regrade = f"{DATA / 'ticket_log.py'}:regrade"
    r, n = rewards(log, tmp_path / "ok", "--regrade", regrade)
    assert r.returncode == 0, r.stderr
    assert n["fidelity"]["max_drift"] == 0.0 and n["fidelity"]["passed"]
    tampered = [dict(x, components=dict(x["components"])) for x in rows]
    tampered[100]["components"]["quality"] += 0.05
    bad = ticket.write_jsonl(tmp_path / "tampered.jsonl", tampered)
    r, n = rewards(bad, tmp_path / "bad", "--regrade", regrade, "--tolerance", "0.01")
    assert r.returncode == 1 and "fidelity gate FAILED" in r.stderr
    f = n["fidelity"]
    assert f["max_drift"] == pytest.approx(0.05) and f["rows_over_tolerance"] == 1
    assert f["max_drift_at"] == {"completion_id": tampered[100]["completion_id"], "field": "quality"}
    assert "**FAILED**" in (tmp_path / "bad" / "report.md").read_text()


def test_shipped_demo_log(tmp_path):
    """Run 1's reward code re-grades run 1 exactly; run 2's rule (no length minimum) does not; the trends
    the generator was tuned to (citations up, arithmetic down, as in docs/motivating-experiment.md)
    show in the window table."""
    r, n = rewards(RUN1, tmp_path / "own", "--window", "5", "--regrade", f"{DATA / 'demo_regrade.py'}:run1")
    assert r.returncode == 0 and n["fidelity"]["max_drift"] == 0.0, r.stderr
    delta = {row["component"]: row["delta"] for row in n["windows"]["rows"]}
    assert delta["citation"] > 0.2 and delta["arithmetic"] < -0.3
    assert n["zero_variance"]["zero_variance"] == 3
    r, n = rewards(RUN1, tmp_path / "other", "--regrade", f"{DATA / 'demo_regrade.py'}:run2")
    assert r.returncode == 1 and n["fidelity"]["max_drift_at"]["field"] == "length"


@pytest.mark.parametrize("args, message", [
    (["--form", "politeness", "--correctness", "arithmetic"], "--form: 'politeness' is not a component"),
    (["--window", "16"], "--window: must be between 1 and half the 30 logged steps"),
    (["--parse", "no_such_module:f"], "--parse: cannot import 'no_such_module'"),
    (["--zero-of", "quality"], "--zero-of: 'quality' is not a component"),
    (["--column", "reward=total"], "run1.jsonl:1: field 'total': missing"),
])
def test_bad_options_exit_2_naming_what(args, message, tmp_path):
    r, _ = rewards(RUN1, tmp_path / "o", *args)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr
