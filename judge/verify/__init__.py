"""Verification: `checks` (judge verify: both paths compared), `rederive` (the raw files' derived fields re-derived),
`second_path` (every number decided again by code of its own) and `bundle` (a publishable bundle, verified)."""
