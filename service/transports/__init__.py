"""The service's two transports over the one application layer: gRPC and HTTP/JSON."""
