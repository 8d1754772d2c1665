"""railyard.v1, the Railyard API, for Python: the messages and gRPC stubs
generated from ``proto/railyard/v1`` by ``scripts/gen-proto`` (do not edit
them), shared by the service and the client; and :mod:`railyard_api.convert`,
between those messages and the engine's values (with ``railyard-api[engine]``).
"""
