"""Arms: the systems under test (base, trained, glue over either), their backends and answer collection."""
