"""Strata benchmarks (speed targets live here, never as timed assertions in tests). See bench/README.md."""
