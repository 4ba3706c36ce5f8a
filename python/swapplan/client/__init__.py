"""swapplan.client: Python client of the planner service (`swapplan serve`,
gRPC swapplan.v1.Planner, docs/service.md). Needs grpcio and protobuf
(Debian: python3-grpcio, python3-protobuf); not PyTorch.

    from swapplan.client import Planner, Infeasible
    planner = Planner("127.0.0.1:7070")        # token from $SWAPPLAN_TOKEN
    r = planner.plan("step.trace", device_memory="60GiB", planner="chameleon")
    r.save("policy.pb")

See planner.py for every method, _errors.py for the exceptions.
"""

from ._errors import (Cancelled, DeadlineExceeded, FingerprintMismatch, Infeasible,
                      InternalError, InvalidArgument, NotFound, PlannerError, ResourceExhausted,
                      Unauthenticated, Unavailable)
from .planner import (DEFAULT_ADDRESS, InlineTrace, Planner, PlanResult, SearchCall,
                      SearchResult, UploadedTrace)

__all__ = ["Planner", "PlanResult", "SearchCall", "SearchResult", "UploadedTrace", "InlineTrace",
           "DEFAULT_ADDRESS", "PlannerError", "InvalidArgument", "NotFound",
           "FingerprintMismatch", "Infeasible", "ResourceExhausted", "DeadlineExceeded",
           "Cancelled", "Unauthenticated", "Unavailable", "InternalError"]
