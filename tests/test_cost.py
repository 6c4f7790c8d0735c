"""The cost line of an arm or judge, computed by hand from planted rows and prices."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from judge.cost import cost_line
from registration.spec import ModelSpec

pytestmark = pytest.mark.unit


def row(calls: list[str], prompt: int, completion: int) -> SimpleNamespace:
    return SimpleNamespace(calls=calls, prompt_tokens=prompt, completion_tokens=completion)


def test_batched_rows_at_half_the_registered_prices_the_rest_at_full():
    model = ModelSpec("m", "openai", "x", price_input=3.0, price_output=15.0)
    rows = [row(["a", "b"], 100, 20),  # every call answered by a batch: half price
            row(["c"], 50, 10),  # a synchronous call: full price
            row(["a", "d"], 7, 3),  # one call of two by a batch: full price
            row([], 0, 0)]  # an error row without a call
    line = cost_line("judge", "j", model, rows, batched={"a", "b"})
    # by hand: full (50 + 7) * 3 + (10 + 3) * 15 = 171 + 195 = 366; half of 100 * 3 + 20 * 15 = 300
    assert line["usd"] == pytest.approx((366 + 300) / 1e6, abs=1e-15)
    assert (line["input_tokens"], line["output_tokens"], line["batch_input_tokens"],
            line["batch_output_tokens"], line["rows"]) == (157, 33, 100, 20, 4)


def test_no_price_registered_shows_tokens_only():
    line = cost_line("arm", "a", ModelSpec("m", "llama-cpp", "embedded:smollm2"), [row(["k"], 5, 2)], set())
    assert line["usd"] is None and (line["input_tokens"], line["output_tokens"]) == (5, 2)
