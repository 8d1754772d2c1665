"""Railyard's service: the application layer, stores, transports (issue 3)."""

import os

#: What gRPC's C core was asked for by the environment and is not given:
#: it reads these once, when grpc is first imported (by most modules of this
#: package, so it is done here, first), and writes what they ask for straight
#: to stderr, past the log's handler and its redaction (service.ops.redaction):
#: GRPC_TRACE's traces hold the calls' metadata (seat tokens, API keys), and
#: GRPC_VERBOSITY above ERROR adds lines of its own. configure_logging logs
#: what was ignored.
GRPC_ENV_IGNORED: dict[str, str] = {}
if "GRPC_TRACE" in os.environ:
    GRPC_ENV_IGNORED["GRPC_TRACE"] = os.environ.pop("GRPC_TRACE")
if os.environ.get("GRPC_VERBOSITY", "").upper() in ("DEBUG", "INFO"):
    GRPC_ENV_IGNORED["GRPC_VERBOSITY"] = os.environ["GRPC_VERBOSITY"]
    os.environ["GRPC_VERBOSITY"] = "ERROR"
