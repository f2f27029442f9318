"""Staging: archive.db (source of truth) and staging.db (run ledger and stage outputs)."""
