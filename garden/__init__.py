"""The garden stage: facts with bi-temporal validity, stale and merged concepts tidied (see garden/stage.py)."""
