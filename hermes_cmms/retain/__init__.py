"""Admission: what a memory goes through before it is stored (redaction, limits, duplicates)."""
