"""Audits that gate runs: the top-k gaming audit of training completions, and reward-log telemetry."""
