"""Periodic maintenance passes that skip and record an entry they cannot handle instead of stopping
(`skips.py`), the record's metrics, and the listings for operators (`router.py`): the skipped entries, and the
passes run once across the replicas with their holders and last runs."""
