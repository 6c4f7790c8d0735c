"""verify's second path: every number of numbers.json recomputed from the raw files by code of its own, in one package
a reviewer reads. It imports nothing of the main path (judge.numbers.stats, judge.numbers.analysis,
judge.numbers.validity, judge.numbers.biases; tests/test_layers.py follows its imports, lazy and indirect ones
included), only lower layers.

* ``decisions``: the raw files read by hand, every cell, comparison, subset and judge statistic, the bootstrap, the
  score rule and the verdicts;
* ``judge_error``: each judge against gold (agreement, confusion, offsets, and their bootstrap intervals on the
  same draws), each decision's gold-corrected (PPI++) interval and its verdict at any level (on which the family
  steps down under ``judge_error = "decide"``), its calibration, and ``min_gold_agreement``;
* ``biases``: self-preference, test-retest, the style regression and the family of hypotheses.
* ``stability``: pass^k, pass@k, the pass rate and the agreement across each cell's K samples, with their intervals.

judge.verify.checks compares what these give with numbers.json.
"""
