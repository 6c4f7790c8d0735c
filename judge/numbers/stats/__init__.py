"""Paired statistics for comparing two systems scored on the same questions: the main path of every decision.

Modules, by concern:
* ``bootstrap``: resampling units, resamples as counts per distinct unit, exact quantiles, percentile and BCa
  intervals (and scipy's float arithmetic for the same intervals);
* ``t_bounds``: the sign test, paired t interval and test, the guarded t interval, t-based power (MDE, questions
  needed), the cluster-robust SE;
* ``rule``: the score test anchored to the rubric's scale, the registered default rule;
* ``decision_rules``: the decision rules registered by name (``DECISION_RULES``), each a module (``score``,
  ``bootstrap``, ``bootstrap_and_t``) with the interval it decides on, its verdict's wording and its calibration;
* ``paired``: one paired comparison (``paired``, returning numbers.json's ``core.records.Result``), with the interval
  or tests its rule decides on;
* ``decide``: the registered rule's verdict on a paired comparison; ``calibration``: its false-claim rate
  simulated at the boundary; ``hypothesis``: one registered hypothesis decided, guards included;
* ``agreement``: Cohen's kappa (weighted, bootstrapped) and Krippendorff's alpha;
* ``ppi``: prediction-powered estimates with gold labels; ``ppi_power``: their decision's power before the labels;
  ``judge_error``: the judge measured against gold; ``stability``: pass^k, pass@k and agreement across K samples.
Callers import each name from the module that defines it: this package exports nothing of its own. The words
they decide by (rules, methods, kinds, verdicts) are registration.vocabulary's. verify's second path,
judge.verify.second_path, recomputes every decision without importing any of this package.

Conventions (read these before using any number this module returns)
--------------------------------------------------------------------
* Direction: every paired quantity is about ``d = b - a`` per question, i.e. "b vs a".
  A positive difference means system **b** scored higher than system **a**. Pass the
  baseline as ``a`` and the candidate as ``b``.
* ``alpha`` is ONE-SIDED. The registered decision (non-inferiority / superiority) uses the
  one-sided (1 - alpha) lower bound of the mean difference, ``Result.bound``.
* The reported interval ``ci_low``/``ci_high`` (and ``t_low``/``t_high``) is the TWO-SIDED
  (1 - 2*alpha) interval, whose lower end is the one-sided (1 - alpha) bootstrap bound. So:
    - ``alpha=0.025`` -> two-sided 95% interval (regulatory convention: FDA 2016, CONSORT 2012);
    - ``alpha=0.05``  -> two-sided 90% interval, lower end = one-sided 95% lower bound.
  Equivalence is TOST with the same (1 - 2*alpha) interval. ``Result.bound``/``Result.upper`` are the
  interval the registered rule decides on (registration.vocabulary.RULES): the score test inverted, the bootstrap
  interval, or the wider of it and a small-sample t interval.
* Exact arithmetic: scores are small integers and a question's score is the mean of its K samples, so
  every difference and every resample mean is a rational with a known denominator. The bootstrap
  quantiles are computed exactly (integer numerators over a common denominator) and rounded once, so a
  bound exactly at the margin compares equal to it (and does not clear it) in both verification paths.
* Resampling: questions, or whole clusters of questions when a set declares clusters (cluster bootstrap).
* Power figures (``Result.mde``, ``Result.n_for_margin``) use the same one-sided alpha
  (= two-sided 2*alpha) and power 0.8, with the paired t-test's power (noncentral t) and the observed SD
  of the differences.
* Bootstrap intervals follow ``scipy.stats.bootstrap`` (percentile and BCa, "linear" quantile,
  i.e. np.percentile's default) so they can be checked against scipy on the same bootstrap
  distribution. Two deliberate, documented departures:
    - when all differences are equal (identical arms, zero variance) every interval is the
      point ``(d[0], d[0])`` instead of scipy's NaN;
    - in BCa's bias correction a bootstrap mean equal to the observed mean counts as a tie (exactly in
      paired(); within ``_TIE_TOL``, relative 1e-12, in the float helpers ``bca_interval``).
* The bootstrap draws its resamples as counts per distinct unit (``resample_counts``), a documented scheme that
  verify's second path draws again by its own code, so both paths decide on exactly the same resamples.
"""
