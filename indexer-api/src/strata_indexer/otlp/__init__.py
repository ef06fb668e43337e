"""OTLP/HTTP ingest: OpenTelemetry logs, traces and metrics into indexes of default schemas, through the ingest
path (late data, group commit, exactly once per accepted request)."""
