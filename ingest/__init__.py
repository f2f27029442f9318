"""Ingest: read export dumps (ChatGPT, Claude, LibreChat, Chatbot UI, generic JSONL) into the archive.

Parsers are pure: a binary stream in, `ExportConversation` and `QuarantineRecord` objects out. `stage.py`
is the one entry point that opens files, detects formats and writes to archive.db.
"""
