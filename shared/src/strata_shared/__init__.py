"""strata_shared."""
