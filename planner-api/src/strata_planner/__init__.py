"""strata_planner."""
