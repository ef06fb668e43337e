"""strata_query."""
