"""Hand-written gRPC method bindings of swapplan.v1.Planner.

grpc_tools (which would generate planner_service_pb2_grpc.py) is not in
Debian, so each method is bound here as generated code would bind it:
by its full name, with the request serializer and response deserializer of
its messages (proto/planner_service.proto, `service Planner`).
"""

from ._proto import pb

SERVICE = "/swapplan.v1.Planner/"


# (method, kind of call, request message, response message), as in
# `service Planner`.
_METHODS = [
    ("UploadTrace", "stream_unary", "UploadTraceRequest", "UploadTraceResponse"),
    ("Plan", "unary_unary", "PlanRequest", "PlanResponse"),
    ("Search", "unary_stream", "SearchRequest", "SearchUpdate"),
    ("Check", "unary_unary", "CheckRequest", "CheckResponse"),
    ("Simulate", "unary_unary", "SimulateRequest", "SimulateResponse"),
    ("Compare", "unary_unary", "CompareRequest", "CompareResponse"),
    ("GetPolicy", "unary_unary", "GetPolicyRequest", "PlanResponse"),
]


class PlannerMethods:
    """One callable per RPC on `channel` (a grpc.Channel)."""

    def __init__(self, channel):
        for name, kind, request, response in _METHODS:
            setattr(self, name, getattr(channel, kind)(
                SERVICE + name,
                request_serializer=getattr(pb, request).SerializeToString,
                response_deserializer=getattr(pb, response).FromString))
