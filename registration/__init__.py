"""What an experiment registered before anything was scored: every spec (models, adapters, arms, runtime,
judges), the question sets, the rubrics, the hypotheses and analysis settings, the seal and its amendments.
Every layer above the models may read it (docs/architecture.md)."""
