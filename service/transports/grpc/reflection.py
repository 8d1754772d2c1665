"""gRPC server reflection under both names clients use: ``grpc.reflection.v1``
(current grpcurl, Postman, IDEs) and ``grpc.reflection.v1alpha`` (older ones).

grpcio-reflection ships only v1alpha (grpc/grpc#38576). The v1 protocol is
the same file under a new package: every message, field and number is
unchanged, so v1's messages are byte for byte v1alpha's on the wire. The
library's servicer therefore answers both: v1 is registered with v1alpha's
serializers, and the v1 file itself (v1alpha's descriptor renamed) is added
to the descriptor pool so that reflection can describe itself under v1 too.
"""

from __future__ import annotations

from collections.abc import Iterable

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_reflection.v1alpha import reflection, reflection_pb2

# (grpc-stubs' stubs predate the asyncio servicer.)
from grpc_reflection.v1alpha.reflection import aio as reflection_aio  # type: ignore[attr-defined]

V1ALPHA_PACKAGE = "grpc.reflection.v1alpha"
V1_PACKAGE = "grpc.reflection.v1"
V1_SERVICE_NAME = f"{V1_PACKAGE}.ServerReflection"
V1ALPHA_SERVICE_NAME: str = reflection.SERVICE_NAME


def _v1_file() -> descriptor_pb2.FileDescriptorProto:
    """grpc/reflection/v1/reflection.proto, from v1alpha's descriptor."""
    proto = descriptor_pb2.FileDescriptorProto()
    reflection_pb2.DESCRIPTOR.CopyToProto(proto)
    proto.name = "grpc/reflection/v1/reflection.proto"
    proto.package = V1_PACKAGE
    proto.options.Clear()  # v1alpha's language options name v1alpha
    for message in proto.message_type:
        for field in message.field:
            if field.type_name.startswith(f".{V1ALPHA_PACKAGE}."):
                field.type_name = f".{V1_PACKAGE}." + field.type_name.rsplit(".", 1)[1]
    for service in proto.service:
        for method in service.method:
            method.input_type = method.input_type.replace(V1ALPHA_PACKAGE, V1_PACKAGE)
            method.output_type = method.output_type.replace(V1ALPHA_PACKAGE, V1_PACKAGE)
    return proto


def _register_v1(pool: descriptor_pool.DescriptorPool) -> None:
    try:
        pool.FindFileByName("grpc/reflection/v1/reflection.proto")
    except KeyError:
        pool.Add(_v1_file())


def enable(server: grpc.aio.Server, service_names: Iterable[str]) -> None:
    """Serve reflection for ``service_names`` (and itself) under v1 and v1alpha."""
    pool = descriptor_pool.Default()
    _register_v1(pool)
    names = (*service_names, V1_SERVICE_NAME, V1ALPHA_SERVICE_NAME)
    # The library's asyncio servicer: it answers from the pool alone, each
    # request as it arrives on the stream.
    servicer = reflection_aio.ReflectionServicer(names, pool=pool)  # type: ignore[attr-defined]
    for service in (V1_SERVICE_NAME, V1ALPHA_SERVICE_NAME):
        handler = grpc.stream_stream_rpc_method_handler(
            servicer.ServerReflectionInfo,
            request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
            response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
        )
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(service, {"ServerReflectionInfo": handler}),)
        )
