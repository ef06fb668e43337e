"""Strata's service frame: the web app frame, the job queue, the maintenance passes, Spark Connect."""
