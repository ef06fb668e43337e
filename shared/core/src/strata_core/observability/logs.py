"""Log lines as JSON (one object per line, for machines: the default of `strata up` and `strata serve`) or as
text (for a person at a terminal). Every line carries the process's service, the fields of the context it was
emitted in (request id, index, job id, fencing token; see `context`), and the trace and span ids when a span is
recording, so a line can be found from a trace and back."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Literal, TextIO

from opentelemetry import trace

from strata_core.observability.context import current_fields

LogFormat = Literal["json", "text"]
LOG_FORMATS: tuple[LogFormat, ...] = ("json", "text")


def line_fields(record: logging.LogRecord, service: str) -> dict[str, object]:
    """What one log line says, in a stable order: when, how bad, who, where from, what, then the context."""
    fields: dict[str, object] = {
        "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "level": record.levelname.lower(),
        "service": service,
        "logger": record.name,
        "message": record.getMessage(),
    }
    fields.update(current_fields())
    span = trace.get_current_span().get_span_context()
    if span.is_valid:
        fields["trace_id"] = format(span.trace_id, "032x")
        fields["span_id"] = format(span.span_id, "016x")
    return fields


class _ServiceFormatter(logging.Formatter):
    """Names the process's service on lines emitted outside any request or job (start-up, shutdown)."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service


class JsonFormatter(_ServiceFormatter):
    def format(self, record: logging.LogRecord) -> str:
        fields = line_fields(record, self.service)
        if record.exc_info:
            fields["exception"] = self.formatException(record.exc_info)
        # default=str: a context value that is not JSON (a datetime, an enum) is written as text, never dropped.
        return json.dumps(fields, default=str, ensure_ascii=False)


class TextFormatter(_ServiceFormatter):
    def format(self, record: logging.LogRecord) -> str:
        fields = line_fields(record, self.service)
        head = f"{fields.pop('ts')} {str(fields.pop('level')).upper():<7} {fields.pop('service')} " \
               f"{fields.pop('logger')}: {fields.pop('message')}"
        fields.pop("trace_id", None)
        fields.pop("span_id", None)
        context = " ".join(f"{k}={v}" for k, v in fields.items())
        line = f"{head}  [{context}]" if context else head
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def configure_logging(service: str, log_format: LogFormat = "json", level: str | int = "INFO",
                      stream: TextIO | None = None) -> logging.Handler:
    """Makes the root logger write every line (uvicorn's included, which must then be run with
    `log_config=None` so it keeps no handler of its own) in `log_format` to `stream` (stderr). Replaces the
    root's handlers: calling it again reconfigures instead of doubling every line."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {', '.join(LOG_FORMATS)}, not {log_format!r}")
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter(service) if log_format == "json" else TextFormatter(service))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).propagate = True
    # httpx logs every request at INFO: the proxy's forwards and health checks would double the access lines.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    return handler
