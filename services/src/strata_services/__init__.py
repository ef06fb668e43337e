"""strata_services."""
