"""HTTP/JSON: the FastAPI routes, OpenAPI, the docs and the web table's files,
and the connection limits."""
