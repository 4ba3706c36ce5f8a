"""Planner: the Python client of the planner service (`swapplan serve`).

    from swapplan.client import Planner
    with Planner("127.0.0.1:7070") as planner:         # token: $SWAPPLAN_TOKEN
        r = planner.plan("step.trace", device_memory="60GiB")
        print(r.report["iteration_time_ns"], r.cache_hit)
        r.save("step-policy.pb")
        print(planner.check("step.trace", r)["clean"])
        for p in (search := planner.search("step.trace", device_memory="60GiB",
                                           options={"max-generations": 20})):
            print(p["generation"], p["best_ns"])
        print(search.result.plan.report["iteration_time_ns"])

A trace is a file path, bytes, an UploadedTrace (Planner.upload) or an
InlineTrace (small traces sent inside each request). A path or bytes is
uploaded once in chunks (UploadTrace, client streaming) and its trace id is
remembered; when the server no longer holds it (NOT_FOUND: evicted, another
replica), the client uploads it again and retries the call once.

Results carry the fields of the CLI's `--json` reports by the proto's names
(proto/planner_service.proto): plan / get_policy / search give a PlanResult,
check / simulate / compare a dict. A failed call raises the PlannerError
subclass of its gRPC status code (_errors.py), with the server's message.

Every call has a deadline: `timeout_s` of the call, else of the Planner.
Threading model: a Planner may be shared by any number of threads (gRPC
channels are thread-safe; the table of uploaded traces has its own lock).
"""

import hashlib
import os
import threading
import zlib

import grpc

from ._convert import device_spec, option_text, to_dict
from ._errors import NotFound, Unavailable, from_rpc_error
from ._proto import pb
from ._methods import PlannerMethods

DEFAULT_ADDRESS = "127.0.0.1:7070"
CHUNK_BYTES = 1 << 20  # the proto's largest chunk


class UploadedTrace:
    """A trace the server holds: `trace_id` names it in requests; `info` is
    its TraceInfo as a dict (size_bytes, num_iterations, num_ops,
    iterations, device_memory_bytes, ...)."""

    def __init__(self, info):
        self.info = info
        self.trace_id = info["trace_id"]

    def __repr__(self):
        return "UploadedTrace(%r, %d bytes)" % (self.trace_id, self.info["size_bytes"])


class InlineTrace:
    """A small trace sent inside each request (the server refuses one over
    its --max-trace-bytes; the proto suggests under 4 MiB)."""

    def __init__(self, data, name="inline"):
        self.data = bytes(data)
        self.name = name


class PlanResult:
    """A policy and its report (PlanResponse): `report` (dict, the fields of
    `swapplan plan --json`), `policy` (bytes of a binary .pb policy),
    `policy_json` (str, with policy_as_json), `cache_key` (for get_policy),
    `cache_hit`, `best_so_far` (a search stopped by its deadline) and
    `plan_time_ns` (server time spent planning; 0 for a cache hit)."""

    def __init__(self, response):
        self.response = response
        self._report = None
        self.policy = response.policy
        self.policy_json = response.policy_json
        self.cache_key = response.cache_key
        self.cache_hit = response.cache_hit
        self.best_so_far = response.best_so_far
        self.plan_time_ns = response.plan_time_ns

    @property
    def report(self):
        """The PlanReport as a dict, made on first use (a caller that only
        wants the policy or cache_hit does not pay for it)."""
        if self._report is None:
            self._report = to_dict(self.response.report)
        return self._report

    def save(self, path):
        """Writes the policy to `path`: JSON for a *.json name (needs
        policy_as_json=True in the request), the binary form otherwise.
        Returns the path."""
        path = os.fspath(path)
        if path.endswith(".json"):
            if not self.policy_json:
                raise ValueError("%s: the JSON policy was not requested (policy_as_json=True)"
                                 % path)
            with open(path, "w", encoding="utf-8") as f:
                f.write(self.policy_json)
        else:
            with open(path, "wb") as f:
                f.write(self.policy)
        return path

    def to_dict(self):
        return to_dict(self.response)


class SearchResult:
    """The end of a search (the proto's SearchResult; what `swapplan search
    --json` reports, named as there in brackets):

      plan                    PlanResult of the final policy (planner "advisor")
      stop_reason             "time limit", "generation limit", "converged",
                              "deadline" [stop_reason]
      generations             [num_generations]
      evaluations             [num_evaluations]
      infeasible_evaluations  [num_infeasible_evaluations]
      search_time_ns          wall time of the search [search_time_ns]
      source                  where the best came from: "search", "local
                              search" or a seed planner's name [result_source]
      local_moves_tried       [num_local_moves_tried]
      local_moves_kept        [num_local_moves_kept]
      seeds                   list of dicts: planner, iteration_time_ns (-1:
                              it does not fit; the CLI writes null),
                              chromosome, note [seeds]
      history                 list of dicts, every generation's progress (as
                              a SearchCall yields them; the CLI's --history)
      simulation              dict, the evaluation simulator's run of the
                              final policy (as Planner.simulate returns it)

    A cache hit (or a call that waited on an identical search) carries the
    figures of the search that made the policy."""

    def __init__(self, message):
        self.message = message
        self.plan = PlanResult(message.plan)
        self.stop_reason = message.stop_reason
        self.generations = message.generations
        self.evaluations = message.evaluations
        self.infeasible_evaluations = message.infeasible_evaluations
        self.search_time_ns = message.search_time_ns
        self.source = message.source
        self.local_moves_tried = message.local_moves_tried
        self.local_moves_kept = message.local_moves_kept
        self.seeds = [to_dict(x) for x in message.seeds]
        self.history = [to_dict(x) for x in message.history]
        self.simulation = to_dict(message.simulation)

    def to_dict(self):
        """Every field above, `plan` as PlanResult.to_dict()."""
        return to_dict(self.message)


class SearchCall:
    """Iterating yields one dict per generation (SearchProgress: generation,
    elapsed_ns, best_ns, mean_ns, worst_ns, best_ever_ns, feasible,
    population, evaluations, evaluations_per_s, elite_ns, islands_best_ns);
    afterwards `result` holds the SearchResult. wait() consumes the progress and returns the result;
    cancel() ends the call (the server stops the search)."""

    def __init__(self, call):
        self._call = call
        self.result = None

    def __iter__(self):
        try:
            for update in self._call:
                if update.HasField("progress"):
                    yield to_dict(update.progress)
                elif update.HasField("result"):
                    self.result = SearchResult(update.result)
        except grpc.RpcError as e:
            raise from_rpc_error("Search", e) from None

    def wait(self):
        for _ in self:
            pass
        return self.result

    def cancel(self):
        self._call.cancel()


_GZIP_MAGIC = b"\x1f\x8b"


def _gzip_json_reader(read):
    """For a gzip stream read by `read(n)`: a reader of its decompressed
    bytes when they are JSON (the service takes JSON, binary and gzip'ed
    binary traces, not gzip'ed JSON), else None. Decompresses as it is read:
    memory stays at about one chunk."""
    head = read(1 << 16)
    z = zlib.decompressobj(16 + zlib.MAX_WBITS)
    first = z.decompress(head, 1 << 16)
    if not first.lstrip()[:1] == b"{":
        return None
    pending = [first, z.unconsumed_tail, False]  # output, input, input ended

    def reader(n):
        out = bytearray(pending[0])
        pending[0] = b""
        while len(out) < n and not pending[2]:
            src = pending[1] or read(1 << 16)
            pending[1] = b""
            if not src:
                out += z.flush()
                pending[2] = True
                break
            out += z.decompress(src, n - len(out) + (1 << 16))
            pending[1] = z.unconsumed_tail
        data = bytes(out[:n])
        pending[0] = bytes(out[n:])
        return data
    return reader


def _read_policy(policy):
    if isinstance(policy, PlanResult):
        return policy.policy
    if isinstance(policy, (bytes, bytearray, memoryview)):
        return bytes(policy)
    with open(os.fspath(policy), "rb") as f:
        return f.read()


class Planner:
    """A connection to `swapplan serve` at `address` ("host:port").

    Args:
      token: the service's token (`--token-file` on the server); None: the
        environment's SWAPPLAN_TOKEN, if set. Sent as `authorization:
        Bearer <token>` on every call.
      tls_ca: PEM file of the roots that sign the server's certificate: the
        connection uses TLS (server started with --tls-cert/--tls-key).
      tls_server_name: the name checked in the server's certificate, when
        it differs from the host of `address`.
      timeout_s: the deadline of each call unless the call gives its own.
      chunk_bytes: upload chunk size (at most 1 MiB).
    """

    def __init__(self, address=DEFAULT_ADDRESS, *, token=None, tls_ca=None,
                 tls_server_name=None, timeout_s=300.0, chunk_bytes=CHUNK_BYTES):
        if not 0 < chunk_bytes <= CHUNK_BYTES:
            raise ValueError("chunk_bytes must be in (0, %d], got %r" % (CHUNK_BYTES, chunk_bytes))
        if timeout_s is None or timeout_s <= 0:
            raise ValueError("timeout_s must be positive, got %r" % (timeout_s,))
        self.address = address
        self.timeout_s = float(timeout_s)
        self.chunk_bytes = int(chunk_bytes)
        if token is None:
            token = os.environ.get("SWAPPLAN_TOKEN") or None
        self._metadata = (("authorization", "Bearer " + token),) if token else ()
        options = [("grpc.max_receive_message_length", -1),
                   ("grpc.max_send_message_length", -1)]
        if tls_ca is not None:
            with open(os.fspath(tls_ca), "rb") as f:
                roots = f.read()
            if tls_server_name:
                options.append(("grpc.ssl_target_name_override", tls_server_name))
            self._channel = grpc.secure_channel(
                address, grpc.ssl_channel_credentials(root_certificates=roots), options=options)
        else:
            self._channel = grpc.insecure_channel(address, options=options)
        self._rpc = PlannerMethods(self._channel)
        self._uploaded = {}  # source key -> UploadedTrace
        self._lock = threading.Lock()

    # -- lifecycle
    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def wait_ready(self, timeout_s=10.0):
        """Waits until the channel is connected; Unavailable after
        `timeout_s` seconds."""
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout_s)
        except grpc.FutureTimeoutError:
            raise Unavailable("connect", grpc.StatusCode.UNAVAILABLE,
                              "%s: not reachable within %gs" % (self.address, timeout_s)) from None

    # -- plumbing
    def _timeout(self, timeout_s):
        return self.timeout_s if timeout_s is None else float(timeout_s)

    def _unary(self, method, request, timeout_s):
        try:
            return getattr(self._rpc, method)(request, timeout=self._timeout(timeout_s),
                                               metadata=self._metadata)
        except grpc.RpcError as e:
            raise from_rpc_error(method, e) from None

    def _chunks(self, name, total, read):
        first = True
        while True:
            data = read(self.chunk_bytes)
            if not data and not first:
                return
            msg = pb.UploadTraceRequest(chunk=data)
            if first:
                msg.name = name
                msg.total_bytes = total
                first = False
            yield msg
            if not data:
                return

    def _upload_stream_requests(self, requests, timeout_s):
        """UploadTrace with the UploadTraceRequest messages of `requests`
        (an iterator, consumed as gRPC sends); the UploadedTrace."""
        try:
            resp = self._rpc.UploadTrace(requests, timeout=self._timeout(timeout_s),
                                          metadata=self._metadata)
        except grpc.RpcError as e:
            raise from_rpc_error("UploadTrace", e) from None
        return UploadedTrace(to_dict(resp.trace))

    def _upload_stream(self, name, total, read, timeout_s):
        return self._upload_stream_requests(self._chunks(name, total, read), timeout_s)

    def _upload_read(self, name, total, read, timeout_s):
        """Uploads what `read(n)` gives; gzip'ed JSON is sent decompressed
        (its size unknown up front: total 0)."""
        head = read(2)
        rest = [head]

        def replay(n):
            if rest[0]:
                data, rest[0] = rest[0], b""
                return data + read(n - len(data))
            return read(n)
        if head == _GZIP_MAGIC:
            json_reader = _gzip_json_reader(replay)
            if json_reader is not None:
                if name.endswith(".gz"):
                    name = name[:-3]
                return self._upload_stream(name, 0, json_reader, timeout_s)
        # Binary, gzip'ed binary or JSON: the server reads them as they are.
        return self._upload_stream(name, total, replay, timeout_s)

    def upload(self, trace, name=None, timeout_s=None):
        """Uploads a trace file (path) or its bytes in chunks; returns the
        UploadedTrace. The server refuses one over its --max-trace-bytes
        with ResourceExhausted while it is uploaded. A gzip'ed JSON trace
        (e.g. a runtime record, *.json.gz) is decompressed as it is sent.
        Not remembered: plan() and the others remember what they upload."""
        if isinstance(trace, (bytes, bytearray, memoryview)):
            data = memoryview(bytes(trace))
            pos = [0]

            def read(n):
                chunk = data[pos[0]:pos[0] + n]
                pos[0] += len(chunk)
                return bytes(chunk)
            return self._upload_read(name or "trace", len(data), read, timeout_s)
        path = os.fspath(trace)
        with open(path, "rb") as f:
            total = os.fstat(f.fileno()).st_size
            return self._upload_read(name or os.path.basename(path), total, f.read, timeout_s)

    def _source_key(self, trace):
        if isinstance(trace, (bytes, bytearray, memoryview)):
            return ("bytes", hashlib.sha256(trace).hexdigest())
        path = os.path.realpath(os.fspath(trace))
        st = os.stat(path)
        return ("file", path, st.st_size, st.st_mtime_ns)

    def _trace_ref(self, trace, timeout_s, fresh=False):
        """(TraceRef, whether it came from the remembered uploads)."""
        if isinstance(trace, UploadedTrace):
            return pb.TraceRef(trace_id=trace.trace_id), False
        if isinstance(trace, InlineTrace):
            return pb.TraceRef(inline_trace=trace.data, inline_name=trace.name), False
        key = self._source_key(trace)
        with self._lock:
            known = None if fresh else self._uploaded.get(key)
        if known is not None:
            return pb.TraceRef(trace_id=known.trace_id), True
        uploaded = self.upload(trace, timeout_s=timeout_s)
        with self._lock:
            self._uploaded[key] = uploaded
        return pb.TraceRef(trace_id=uploaded.trace_id), False

    def _with_trace(self, trace, timeout_s, send):
        """send(TraceRef) with the trace uploaded when needed; once more
        after a fresh upload when a remembered trace id is NOT_FOUND."""
        ref, remembered = self._trace_ref(trace, timeout_s)
        try:
            return send(ref)
        except NotFound:
            if not remembered:
                raise
        ref, _ = self._trace_ref(trace, timeout_s, fresh=True)
        return send(ref)

    # -- the service's methods
    def plan(self, trace, device_memory=None, planner="chameleon", options=None, *,
             iteration=0, device=None, reserve=None, h2d_bandwidth=None, d2h_bandwidth=None,
             copy_latency=None, half_duplex=False, compute_time_scale=None, tiers=None,
             policy_as_json=False, skip_cache=False, timeout_s=None):
        """Plans `iteration` of `trace` for the device (the trace's recorded
        figures, then preset `device`, then the arguments given; units as
        the CLI's flags; `tiers`: memory tiers beyond the host, a list of
        dicts such as {"capacity": "1TiB", "bandwidth": "50GB/s"}, what
        the CLI's --remote-* flags give) with `planner` and its `options`
        (dict, the names of `swapplan plan --help` without the dashes'
        prefix, e.g. {"min-tensor-bytes": "1MiB"}). Returns a PlanResult."""
        spec = device_spec(device, device_memory, reserve, h2d_bandwidth, d2h_bandwidth,
                           copy_latency, half_duplex, compute_time_scale, tiers)
        opts = {str(k): option_text(v) for k, v in (options or {}).items()}

        def send(ref):
            req = pb.PlanRequest(trace=ref, iteration=int(iteration), device=spec,
                                 planner=planner or "", options=opts,
                                 policy_as_json=bool(policy_as_json), skip_cache=bool(skip_cache))
            return PlanResult(self._unary("Plan", req, timeout_s))
        return self._with_trace(trace, timeout_s, send)

    def search(self, trace, device_memory=None, options=None, *, iteration=0, device=None,
               reserve=None, h2d_bandwidth=None, d2h_bandwidth=None, copy_latency=None,
               half_duplex=False, compute_time_scale=None, tiers=None, policy_as_json=False,
               skip_cache=False, timeout_s=None):
        """The advisor's genetic search (`swapplan search`) with `options`
        (e.g. {"max-generations": 20, "seed": 1}); returns a SearchCall to
        iterate for progress. The trace is uploaded before this returns (a
        search whose remembered trace the server lost raises NotFound, with
        no second try). A deadline (`timeout_s`) stops the search with its
        best so far (result.plan.best_so_far, stop_reason "deadline")."""
        spec = device_spec(device, device_memory, reserve, h2d_bandwidth, d2h_bandwidth,
                           copy_latency, half_duplex, compute_time_scale, tiers)
        opts = {str(k): option_text(v) for k, v in (options or {}).items()}
        ref, _ = self._trace_ref(trace, timeout_s)
        req = pb.SearchRequest(trace=ref, iteration=int(iteration), device=spec, options=opts,
                               policy_as_json=bool(policy_as_json), skip_cache=bool(skip_cache))
        try:
            call = self._rpc.Search(req, timeout=self._timeout(timeout_s),
                                     metadata=self._metadata)
        except grpc.RpcError as e:
            raise from_rpc_error("Search", e) from None
        return SearchCall(call)

    def check(self, trace, policy, *, timeout_s=None):
        """Checks `policy` (a PlanResult, policy bytes, or a policy file,
        binary or JSON) against `trace`; returns the CheckResponse as a dict
        (clean, violations, peak_bytes, ...). FingerprintMismatch when the
        policy was planned for another op sequence."""
        data = _read_policy(policy)
        return self._with_trace(trace, timeout_s, lambda ref: to_dict(
            self._unary("Check", pb.CheckRequest(trace=ref, policy=data), timeout_s)))

    def simulate(self, trace, policy=None, *, iteration=0, device=None, device_memory=None,
                 reserve=None, h2d_bandwidth=None, d2h_bandwidth=None, copy_latency=None,
                 half_duplex=False, compute_time_scale=None, tiers=None, timeout_s=None):
        """Runs the evaluation simulator on the iteration `policy` was made
        for (without a policy: `iteration` with no swapping); the device
        arguments override the policy's recorded device. Returns the
        SimulateResponse as a dict (iteration_time_ns, stall_ns, oom, ...)."""
        data = b"" if policy is None else _read_policy(policy)
        spec = device_spec(device, device_memory, reserve, h2d_bandwidth, d2h_bandwidth,
                           copy_latency, half_duplex, compute_time_scale, tiers)
        return self._with_trace(trace, timeout_s, lambda ref: to_dict(self._unary(
            "Simulate", pb.SimulateRequest(trace=ref, policy=data, iteration=int(iteration),
                                           device=spec), timeout_s)))

    def compare(self, trace, planners=None, *, iteration=0, device=None, device_memory=None,
                reserve=None, h2d_bandwidth=None, d2h_bandwidth=None, copy_latency=None,
                half_duplex=False, compute_time_scale=None, tiers=None, oversubscription=None,
                planner_options=None, timeout_s=None):
        """`swapplan compare`: every planner of `planners` (None: the
        registry's default set) on one budget (device memory, or the
        unswapped peak / `oversubscription`). `planner_options`:
        {planner: {option: value}}. Returns the CompareResponse as a dict
        (budget_bytes, rows, ...)."""
        spec = device_spec(device, device_memory, reserve, h2d_bandwidth, d2h_bandwidth,
                           copy_latency, half_duplex, compute_time_scale, tiers)
        opts = [pb.PlannerOption(planner=p, name=str(k), value=option_text(v))
                for p, o in (planner_options or {}).items() for k, v in o.items()]

        def send(ref):
            req = pb.CompareRequest(trace=ref, iteration=int(iteration), device=spec,
                                    oversubscription=float(oversubscription or 0),
                                    planners=list(planners or ()), planner_options=opts)
            return to_dict(self._unary("Compare", req, timeout_s))
        return self._with_trace(trace, timeout_s, send)

    def get_policy(self, cache_key, *, policy_as_json=False, timeout_s=None):
        """The plan cached under `cache_key` (PlanResult.cache_key) as a
        PlanResult; NotFound when the server no longer holds it."""
        req = pb.GetPolicyRequest(cache_key=str(cache_key), policy_as_json=bool(policy_as_json))
        return PlanResult(self._unary("GetPolicy", req, timeout_s))
