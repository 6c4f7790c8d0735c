"""The cost ceiling's guard against planted prices and requests, by hand; and the ceiling's registration."""
from __future__ import annotations

import shutil

import pytest

from core.errors import BadInput
from judge.judging.budget import Budget, OverBudget
from models.backends.base import Generation, Reply, Request
from models.spec import ModelSpec
from registration.seal import seal
from registration.spec import parse_runtime

from conftest import ROOT, cli, free_port, http_prereg

PRICED = ModelSpec("api", "openai", "gpt-x", base_url="http://127.0.0.1:1/v1", price_input=2.0, price_output=10.0)
FREE = ModelSpec("local", "llama-cpp", "embedded:smollm2")
IDENTITY = {"backend": "openai", "model": "gpt-x", "base_urls": ["http://127.0.0.1:1/v1"]}


def request(text: str, max_tokens: int) -> Request:
    return Request((("system", "Be brief."), ("user", text)), Generation(max_tokens=max_tokens))


def reply(prompt: int, completion: int) -> Reply:
    return Reply("ok", "stop", prompt, completion, 0.1)


@pytest.mark.unit
def test_a_call_is_sent_while_its_bound_fits_and_refused_once_it_would_cross_the_ceiling(tmp_path):
    # bound of one call by hand: input (9 + 8) + (10 + 8) = 35 tokens at $2/M, 100 output at $10/M = $0.00107
    bound = (35 * 2.0 + 100 * 10.0) / 1e6
    budget = Budget(ceiling=0.0030, spent=0.0005, models=[PRICED, FREE], exp_dir=tmp_path, resume="python -m judge run")
    settle = budget(IDENTITY, request("abcdefghij", 100))  # 0.0005 + 0.00107 <= 0.003: sent
    settle(reply(20, 50))  # measured: 20 * 2 + 50 * 10 = $0.00054
    assert budget.spent == pytest.approx(0.0005 + 0.00054, abs=1e-15)
    for spent in (0.00158, 0.00212):  # 0.00104 + 0.00107 and 0.00158 + 0.00107 fit in 0.003: sent, then measured
        budget(IDENTITY, request("abcdefghij", 100))(reply(20, 50))
        assert budget.spent == pytest.approx(spent, abs=1e-15)
    with pytest.raises(OverBudget):  # 0.00212 + 0.00107 = 0.00319 > 0.003: refused before it is sent
        budget(IDENTITY, request("abcdefghij", 100))
    assert budget.spent == pytest.approx(0.00212, abs=1e-15)
    assert bound == pytest.approx(0.00107, abs=1e-15)


@pytest.mark.unit
def test_bounds_in_flight_are_reserved_and_the_crossing_call_is_refused_naming_the_resume(tmp_path):
    budget = Budget(ceiling=0.0030, spent=0.0005, models=[PRICED], exp_dir=tmp_path, resume="python -m judge run --x")
    first = budget(IDENTITY, request("abcdefghij", 100))  # reserves 0.00107: 0.00157
    budget(IDENTITY, request("abcdefghij", 100))  # reserves another: 0.00264 <= 0.003
    with pytest.raises(OverBudget) as e:  # 0.00264 + 0.00107 > 0.003: never sent
        budget(IDENTITY, request("abcdefghij", 100))
    assert "spent $0.0005" in str(e.value) and "python -m judge run --x --max-cost 0.01" in str(e.value)
    first(None)  # a call that failed: its reservation is released, nothing measured
    assert budget.spent == 0.0005
    budget(IDENTITY, request("abcdefghij", 100))  # 0.0005 + 0.00107 * 2 = 0.00264: fits again


@pytest.mark.unit
def test_a_model_without_prices_run_in_process_is_never_charged(tmp_path):
    budget = Budget(ceiling=0.0, spent=0.0, models=[PRICED, FREE], exp_dir=tmp_path, resume="r")
    budget({"backend": "llama-cpp", "model_sha256": "0" * 64}, request("x" * 1000, 1000))(reply(1000, 1000))
    assert budget.spent == 0.0
    with pytest.raises(OverBudget):  # any priced call crosses a zero ceiling
        budget(IDENTITY, request("", 1))


@pytest.mark.unit
@pytest.mark.parametrize("value, ok", [(0, True), (12.5, True), (1_000_000, True), (-0.01, False),
                                       (1_000_001, False), ("5", False)])
def test_the_registered_ceiling_is_a_number_of_usd_within_its_bounds(tmp_path, value, ok):
    doc = {"runtime": {"max_cost_usd": value}}
    if ok:
        assert parse_runtime(doc, tmp_path / "prereg.toml").max_cost_usd == value
    else:
        with pytest.raises(BadInput) as e:
            parse_runtime(doc, tmp_path / "prereg.toml")
        assert e.value.field == "max_cost_usd"
    assert parse_runtime({}, tmp_path / "prereg.toml").max_cost_usd is None


@pytest.mark.integration
def test_a_ceiling_without_the_prices_of_an_http_model_is_refused_before_any_call(tmp_path):
    """No server listens: the refusal comes before the first call (exit 2, naming the model and the key)."""
    url = f"http://127.0.0.1:{free_port()}/v1"
    arm = (f'[models.served]\nbackend = "openai"\nsource = "m"\nbase_url = "{url}"\nprice_input = 1\n'
           'price_output = 1\n\n[[arms]]\nname = "a"\nmodel = "served"\nquants = ["served"]\n\n'
           '[[arms]]\nname = "b"\nmodel = "served"\nquants = ["served"]\n\n')
    exp = tmp_path / "exp"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    (exp / "prereg.toml").write_text(http_prereg("ceiling", url, arm, [("H1", "a", "b")]))  # the judge: no prices
    seal(exp)
    r = cli("judge", "run", "--exp", str(exp), "--limit", "1", "--out", str(tmp_path / "out"), "--max-cost", "5",
            "--quiet", env={"OPENAI_API_KEY": "sentinel"}, timeout=300)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "prereg.toml" in r.stderr and "'gpt'" in r.stderr and "price_input" in r.stderr, r.stderr
    for bad in ("-1", "nan", "2000000"):
        r = cli("judge", "run", "--exp", str(exp), "--max-cost", bad, "--quiet", timeout=300)
        assert r.returncode == 2 and "--max-cost" in r.stderr and "Traceback" not in r.stderr, r.stderr
