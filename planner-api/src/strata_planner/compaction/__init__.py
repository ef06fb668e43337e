"""Compaction: planning, the job scheduler and its poll protocol, status, and the runner."""
