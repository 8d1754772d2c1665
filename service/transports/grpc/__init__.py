"""gRPC: grpcio's asyncio server, its servicers, health and reflection."""
