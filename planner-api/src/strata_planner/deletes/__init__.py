"""Row-level deletes: accepted, hidden from queries at once, rewritten by fenced compaction jobs, receipted."""
