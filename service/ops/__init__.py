"""Running the service: serve, workers, sockets, telemetry, tracing, log redaction."""
