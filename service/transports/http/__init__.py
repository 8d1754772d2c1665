"""HTTP/JSON: the Starlette routes, OpenAPI, the docs and the web table's files,
and the connection limits."""
