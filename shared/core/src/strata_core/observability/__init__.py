"""What a Strata process tells the outside about itself besides /metrics: structured log lines (`logs`) carrying
the request, index and job they belong to (`context`), traces exported over OTLP when the standard `OTEL_*`
variables ask for them (`tracing`), and the HTTP middleware that ties both to each request (`http`)."""
