"""strata_indexer."""
