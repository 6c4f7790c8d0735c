"""The blinded judge, in sub-packages that are layers (lowest first; docs/architecture.md, tests/test_layers.py):
judging, results, numbers, gold, outputs, verify. __main__.py is the command line."""
