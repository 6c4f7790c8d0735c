"""verify's second path: every number of numbers.json recomputed from the raw files by code of its own, in one package
a reviewer reads. It imports nothing of the main path (judge.numbers.stats, judge.numbers.analysis,
judge.numbers.validity, judge.numbers.biases; tests/test_layers.py follows its imports, lazy and indirect ones
included), only lower layers.

* ``raw_files``: the raw files read by hand under the retry rule;
* ``decisions``: every cell, comparison and subset decided again; ``decision_rules``: the decision rules registered
  by name, each the twin of the main path's; ``bootstrap``: the paired bootstrap, sign and t tests; ``score_test``:
  the score rule's test and its inversion;
* ``judges``: each judge's means, agreement, length bias and pairwise counts (``agreement``: kappa, alpha, ranks);
* ``judge_error``: each judge against gold (``gold_agreement``: agreement, confusion, offsets and their bootstrap
  intervals on the same draws), each decision's gold-corrected interval (``ppi``) and its verdict at any level (on
  which the family steps down under ``judge_error = "decide"``), its calibration, and ``min_gold_agreement``;
* ``biases``: self-preference, test-retest, the style regression and the family of hypotheses.
* ``stability``: pass^k, pass@k, the pass rate and the agreement across each cell's K samples, with their intervals;
* ``contamination``: the contaminated questions, and the trained arms' comparisons on the clean ones.

judge.verify.checks compares what these give with numbers.json.
"""
