"""strata_jobs."""
