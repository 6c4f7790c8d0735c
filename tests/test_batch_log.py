"""models.provider_batch's bookkeeping of provider batches: an intent recorded before each submission, settled from the
provider's list when its batch id was never recorded. The provider here is a plain object standing for its state
(what was accepted, what its list shows); the SDKs and the HTTP routes are tested in test_batch_api.py."""
from __future__ import annotations

import time

import pytest

from core import jsonl
from models import provider_batch
from models.backends.base import Generation, ListedBatch, Reply, Request

pytestmark = pytest.mark.unit


class Provider:
    """A provider's batches as its API would report them; `down` makes its list unreachable."""

    name = "provider"
    batch_limits = (100, 10**6)

    def __init__(self, tags: bool):
        self.batch_tags = tags
        self.batches: dict[str, tuple[str | None, list[str], float]] = {}
        self.down = False

    def batch_item(self, key, request):
        return {"custom_id": key}

    def submit_batch(self, requests, tag):
        batch_id = f"b{len(self.batches)}"
        self.batches[batch_id] = (tag if self.batch_tags else None, list(requests), time.time())
        return batch_id

    def listed_batches(self, since):
        if self.down:
            raise ConnectionError("the provider is unreachable")
        return [ListedBatch(b, t, len(keys), tag) for b, (tag, keys, t) in reversed(self.batches.items()) if t >= since]

    def batch_status(self, batch_id):
        return True, "ended"

    def batch_custom_ids(self, batch_id):
        return set(self.batches[batch_id][1])

    def batch_results(self, batch_id, keys):
        mine = self.batches[batch_id][1]
        return {k: Reply(f"answer {k}", "stop", 1, 1, 0.0) if k in mine else None for k in keys}


REQUESTS = {k: Request((("user", k),), Generation()) for k in ("k1", "k2", "k3")}


def killed_after_acceptance(provider: Provider, how: provider_batch.ProviderBatching) -> str:
    """What a kill between the provider accepting a batch and its record leaves: the intent, and the batch."""
    tag = provider_batch._intend(how.log, provider.name, list(REQUESTS))
    return provider.submit_batch(REQUESTS, tag)


def events(how: provider_batch.ProviderBatching) -> list[str]:
    return [rec["event"] for _, rec in jsonl.read(how.log)]


@pytest.mark.parametrize("tags", [True, False], ids=["tagged", "untagged"])
def test_a_batch_accepted_but_never_recorded_is_found_and_followed_not_paid_again(tags, tmp_path):
    provider, how = Provider(tags), provider_batch.ProviderBatching(tmp_path / "batches.jsonl", 0.0, 1)
    accepted = killed_after_acceptance(provider, how)
    provider.submit_batch({"x1": None, "x2": None, "x3": None}, "someone else's")  # the same size, later
    outcome = provider_batch.fill(provider, REQUESTS, how, progress=False)
    assert len(provider.batches) == 2  # nothing submitted again
    assert {k: r.text for k, r in outcome.replies.items()} == {k: f"answer {k}" for k in REQUESTS}
    assert events(how) == ["submitting", "submitted", "ended"]
    assert provider_batch.recorded(how.log)[0][accepted]["found_by"] == "listing"


def test_an_intent_the_provider_never_accepted_is_closed_and_submitted_once(tmp_path):
    provider, how = Provider(True), provider_batch.ProviderBatching(tmp_path / "batches.jsonl", 0.0, 1)
    provider_batch._intend(how.log, provider.name, list(REQUESTS))  # killed before the provider accepted it
    outcome = provider_batch.fill(provider, REQUESTS, how, progress=False)
    assert len(provider.batches) == 1 and set(outcome.replies) == set(REQUESTS)
    assert events(how) == ["submitting", "not found", "submitting", "submitted", "ended"]


def test_while_the_provider_cannot_say_whether_it_holds_a_batch_its_calls_fail_unsubmitted(tmp_path):
    provider, how = Provider(True), provider_batch.ProviderBatching(tmp_path / "batches.jsonl", 0.0, 1)
    killed_after_acceptance(provider, how)
    provider.down = True
    outcome = provider_batch.fill(provider, REQUESTS, how, progress=False)
    assert len(provider.batches) == 1 and not outcome.replies
    assert set(outcome.failed) == set(REQUESTS) and "the next run asks again" in str(outcome.failed["k1"])
    assert events(how) == ["submitting"]  # still open
    provider.down = False
    outcome = provider_batch.fill(provider, REQUESTS, how, progress=False)
    assert len(provider.batches) == 1 and set(outcome.replies) == set(REQUESTS)


def test_each_intent_has_its_own_tag_even_for_the_same_calls(tmp_path):
    log = tmp_path / "batches.jsonl"
    tags = [provider_batch._intend(log, "provider", ["k1", "k2"]) for _ in range(3)]
    assert len(set(tags)) == 3 and set(provider_batch.open_intents(log)) == set(tags)
