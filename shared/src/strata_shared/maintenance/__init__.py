"""Periodic maintenance passes that skip and record an entry they cannot handle instead of stopping
(`skips.py`), the record's metrics, and its listing for operators (`router.py`)."""
