"""Python exceptions for the service's gRPC status codes.

Every failed call raises a PlannerError subclass chosen by the status code
(the table in proto/planner_service.proto); the exception carries the
server's message unchanged (`.message`), the code (`.code`, a
grpc.StatusCode), the RPC (`.method`) and the library's error kind from the
`swapplan-error-kind` trailer (`.kind`, e.g. "infeasible"; None when the
server sent none, e.g. for UNAVAILABLE raised by the client's channel).
The subclasses also derive from the closest built-in exception, so that
`except TimeoutError` or `except ConnectionError` catch what they say.
"""

import grpc

ERROR_KIND_TRAILER = "swapplan-error-kind"


class PlannerError(Exception):
    """A call to the planner service failed (base of every client error)."""

    def __init__(self, method, code, message, kind=None):
        self.method = method
        self.code = code
        self.message = message
        self.kind = kind
        super().__init__("%s: %s: %s" % (method, code.name, message))

    def __reduce__(self):  # picklable (multiprocessing), as the class it is
        return (type(self), (self.method, self.code, self.message, self.kind))


class InvalidArgument(PlannerError, ValueError):
    """INVALID_ARGUMENT: malformed trace or policy, bad request field."""


class NotFound(PlannerError, LookupError):
    """NOT_FOUND: unknown trace id, cache key, planner or device preset."""


class FingerprintMismatch(PlannerError):
    """FAILED_PRECONDITION: the policy was planned for another op sequence."""


class Infeasible(PlannerError):
    """OUT_OF_RANGE: no policy of the planner reaches the budget."""


class ResourceExhausted(PlannerError):
    """RESOURCE_EXHAUSTED: a server limit (--max-trace-bytes,
    --max-concurrent-plans)."""


class DeadlineExceeded(PlannerError, TimeoutError):
    """DEADLINE_EXCEEDED: the call's deadline passed before any result."""


class Cancelled(PlannerError):
    """CANCELLED: the call was cancelled."""


class Unauthenticated(PlannerError, PermissionError):
    """UNAUTHENTICATED: missing or wrong token."""


class Unavailable(PlannerError, ConnectionError):
    """UNAVAILABLE: the server cannot be reached (or is shutting down)."""


class InternalError(PlannerError):
    """INTERNAL: a bug on the server side."""


_BY_CODE = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.FAILED_PRECONDITION: FingerprintMismatch,
    grpc.StatusCode.OUT_OF_RANGE: Infeasible,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.CANCELLED: Cancelled,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.INTERNAL: InternalError,
}


def error_class(code):
    """The exception class for a grpc.StatusCode (PlannerError for codes
    the service does not use, e.g. ABORTED or UNIMPLEMENTED)."""
    return _BY_CODE.get(code, PlannerError)


def from_rpc_error(method, e):
    """The PlannerError for grpc.RpcError `e` raised by `method`."""
    code = e.code() if hasattr(e, "code") else grpc.StatusCode.UNKNOWN
    message = (e.details() if hasattr(e, "details") else None) or str(e)
    kind = None
    trailing = e.trailing_metadata() if hasattr(e, "trailing_metadata") else None
    for key, value in trailing or ():
        if key == ERROR_KIND_TRAILER:
            kind = value.decode() if isinstance(value, bytes) else value
    return error_class(code)(method, code, message, kind)
