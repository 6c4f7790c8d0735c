"""Rule "bootstrap": the recomputed bootstrap interval alone decides."""

from __future__ import annotations

from typing import Any

from .interface import DecisionRule, PairedDifferences
from .interval import interval_verdict


def bounds(c: PairedDifferences) -> dict[str, Any]:
    return {"bound": c.result["ci_low"], "upper": c.result["ci_high"]}


RULE = DecisionRule(name="bootstrap", bounds=bounds, verdict=interval_verdict)
