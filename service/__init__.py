"""Railyard's service: the application layer, stores, transports (issue 3)."""
