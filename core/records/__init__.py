"""The contracts of every raw record and of binding.json, run.json and numbers.json (see check.py for the rule they
are read and written by). Every name is imported from here: `from core.records import Numbers`."""
from .check import *  # noqa: F403
