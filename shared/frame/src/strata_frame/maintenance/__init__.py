"""Periodic maintenance passes that skip and record an entry they cannot handle instead of stopping
(`skips.py`), and the listings for operators (`router.py`): the skipped entries, and the passes run once across the
replicas with their holders and last runs. The record's metrics are `metrics.py`, built by each API that runs
passes."""
