"""`desk import` and `desk export`: readers/ turn a foreign format into items (items.py), plan.py
decides what each becomes, importing.py commits it, exporting.py writes other tools' formats."""
