"""What a table's column holds, for code that checks values against the tables without SQL
types of its own (an import's records: ops/_transfer_records.py)."""
from __future__ import annotations

from sqlalchemy import Float, Integer


def column_kind(column) -> str:
    """"integer", "float" or "text": what a value of `column` must be."""
    if isinstance(column.type, Integer):
        return "integer"
    return "float" if isinstance(column.type, Float) else "text"
