"""The OTLP messages as Strata decodes them: wire-compatible copies of the Collector's definitions in which every
attribute (a `KeyValue`, in any list of them) is kept as its encoded bytes, and so is a KeyValue's value.

Why: reading attributes through the protobuf runtime builds Python objects per attribute (the KeyValue, its
AnyValue), which costs more than everything else of a record. As bytes, a list of attributes comes out as `bytes`
objects, and `values.py` reads the usual ones (a short key, a string, int, double or bool value) straight from them,
the repeated ones from a cache. The copies live in a descriptor pool of their own, so the runtime's own classes
(the SDK's, the responses') are untouched.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.logs.v1 import logs_pb2
from opentelemetry.proto.metrics.v1 import metrics_pb2
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

_POOL = descriptor_pool.DescriptorPool()


_KEY_VALUE = ".opentelemetry.proto.common.v1.KeyValue"


def _as_bytes(field: descriptor_pb2.FieldDescriptorProto) -> None:
    # A length-delimited message field and a bytes field are the same on the wire.
    field.type = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
    field.ClearField("type_name")


def _attributes_as_bytes(messages) -> None:
    for message in messages:
        for field in message.field:
            if field.type_name == _KEY_VALUE or (message.name == "KeyValue" and field.name == "value"):
                _as_bytes(field)
        _attributes_as_bytes(message.nested_type)


# In dependency order: each file names the ones before it.
for _module in (common_pb2, resource_pb2, logs_pb2, trace_pb2, metrics_pb2, logs_service_pb2, trace_service_pb2,
                metrics_service_pb2):
    _proto = descriptor_pb2.FileDescriptorProto()
    _module.DESCRIPTOR.CopyToProto(_proto)
    _attributes_as_bytes(_proto.message_type)
    _POOL.Add(_proto)


def _message(full_name: str) -> type[Message]:
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(full_name))


AnyValue = _message("opentelemetry.proto.common.v1.AnyValue")
KeyValue = _message("opentelemetry.proto.common.v1.KeyValue")
LogsRequest = _message("opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest")
TraceRequest = _message("opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest")
MetricsRequest = _message("opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest")
