"""What an experiment registered before anything was scored: every spec (models, adapters, arms, runtime,
judges), the hypotheses and analysis settings, the seal and its amendments. Every layer above the model
backends may read it (docs/architecture.md)."""
