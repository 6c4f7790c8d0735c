"""Judging: blinding, the judge call and its verdict's parsing, pairwise items, and the checks and cost of a run
before and after its calls. The lowest layer of judge/: it reads no results folder."""
