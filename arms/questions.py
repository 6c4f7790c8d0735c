"""The question record under the name sealed glue imports it by (`from arms.questions import Question`).

Questions are registered inputs and live in registration.questions. Glue sealed in an experiment folder before
they moved, the demo's among them, imports them from here: editing it would change the folder's MANIFEST, and
every results folder bound to it would no longer verify against it. Glue written now may import either name.
"""
from registration.questions import Question, load_questions

__all__ = ["Question", "load_questions"]
