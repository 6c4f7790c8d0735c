"""The cost line of an arm or judge, computed by hand from planted rows and prices."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from judge.judging.cost import cost_line
from models.spec import ModelSpec

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


class _Sized:
    """A provider whose batch items are `size` bytes of JSON each (a plain input to `parts`, not a server)."""

    batch_limits = (3, 1000)

    def __init__(self, sizes: dict[str, int]):
        self.sizes = sizes

    def batch_item(self, key, request):
        return {"k": key, "pad": "x" * (self.sizes[key] - len(json.dumps({"k": key, "pad": ""})) - 1)}


@pytest.mark.unit
def test_batches_are_cut_at_the_request_and_byte_limits_in_order():
    """Planted sizes (bytes per request line, newline included): limits 3 requests and 1000 bytes, unless registered."""
    from models.provider_batch import Outcome, ProviderBatching, parts

    sizes = {"a": 300, "b": 300, "c": 300, "d": 300, "e": 900, "f": 1200, "g": 100}
    backend = _Sized(sizes)
    outcome = Outcome()
    keys = list(sizes)
    got = parts(backend, {k: None for k in keys}, keys, ProviderBatching(Path("x"), 1.0, 1), outcome)
    # a+b+c = 900 (3 requests: full); d = 300, d+e = 1200 > 1000; e = 900; f alone is over 1000: fails unsent
    assert got == [["a", "b", "c"], ["d"], ["e", "g"]]
    assert list(outcome.failed) == ["f"] and "1200 bytes" in str(outcome.failed["f"])
    registered = parts(backend, {k: None for k in keys}, ["a", "b", "c", "g"],
                       ProviderBatching(Path("x"), 1.0, 1, 2, 700), Outcome())
    assert registered == [["a", "b"], ["c", "g"]]
