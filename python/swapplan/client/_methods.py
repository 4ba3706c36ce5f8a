"""Hand-written gRPC method bindings of swapplan.v1.Planner.

grpc_tools (which would generate planner_service_pb2_grpc.py) is not in
Debian, so each method is bound here as generated code would bind it:
by its full name, with the request serializer and response deserializer of
its messages (proto/planner_service.proto, `service Planner`).
"""

from ._proto import pb

SERVICE = "/swapplan.v1.Planner/"


class PlannerMethods:
    """One callable per RPC on `channel` (a grpc.Channel)."""

    def __init__(self, channel):
        self.UploadTrace = channel.stream_unary(
            SERVICE + "UploadTrace",
            request_serializer=pb.UploadTraceRequest.SerializeToString,
            response_deserializer=pb.UploadTraceResponse.FromString)
        self.Plan = channel.unary_unary(
            SERVICE + "Plan",
            request_serializer=pb.PlanRequest.SerializeToString,
            response_deserializer=pb.PlanResponse.FromString)
        self.Search = channel.unary_stream(
            SERVICE + "Search",
            request_serializer=pb.SearchRequest.SerializeToString,
            response_deserializer=pb.SearchUpdate.FromString)
        self.Check = channel.unary_unary(
            SERVICE + "Check",
            request_serializer=pb.CheckRequest.SerializeToString,
            response_deserializer=pb.CheckResponse.FromString)
        self.Simulate = channel.unary_unary(
            SERVICE + "Simulate",
            request_serializer=pb.SimulateRequest.SerializeToString,
            response_deserializer=pb.SimulateResponse.FromString)
        self.Compare = channel.unary_unary(
            SERVICE + "Compare",
            request_serializer=pb.CompareRequest.SerializeToString,
            response_deserializer=pb.CompareResponse.FromString)
        self.GetPolicy = channel.unary_unary(
            SERVICE + "GetPolicy",
            request_serializer=pb.GetPolicyRequest.SerializeToString,
            response_deserializer=pb.PlanResponse.FromString)
