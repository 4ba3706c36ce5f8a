"""A policy provider that asks the planner service (`swapplan serve`).

At GenPolicy the runtime writes its record of the iteration it just ran
(genpolicy-N.json.gz in its work directory) and calls the provider. This one
uploads the record to the service and asks for a plan (Plan RPC, through
swapplan.client), all within `timeout_s` seconds in total, then writes the
policy as WORK_DIR/service-policy-N.pb and returns its path:

    provider = ServicePlanProvider("127.0.0.1:7070", timeout_s=10,
                                   options={"min-tensor-bytes": "1MiB"})
    with SwapRuntime(device_memory="6GiB", model=model, optimizer=opt,
                     provider=provider) as rt:
        ...training steps...
    print(provider.stats)   # asked, policies, fallbacks, errors, last_error

Like `swapplan plan RECORD` (the default provider, provider.py), the budget,
bandwidths and op times are the record's; `options` are the planner's.

Never blocks training for long: when the service is unreachable, slow (no
answer within timeout_s), busy (RESOURCE_EXHAUSTED) or going away
(CANCELLED), the provider falls back to passive handling: it returns no
policy this time (the runtime keeps running Algorithm 3's passive swaps and
asks again at the next GenPolicy iteration), counts it in
stats["fallbacks"] and logs a warning on the "swapplan.runtime" logger. Any
other failure of the service (no feasible policy, a rejected token, a
malformed record) is raised: the runtime records it as the iteration's
plan_error and training goes on, also without a policy.

Threading model: the runtime calls the provider on the training thread,
inside the entry point that ends an iteration; the gRPC channel (created at
the first call, kept for later ones) is thread-safe. close() releases it.
"""

import logging
import os
import time

_LOG = logging.getLogger("swapplan.runtime")


class ServicePlanProvider:
    """Callable provider: request dict -> policy path, or None (fallback).

    Args:
      address: the service, "host:port".
      timeout_s: the most seconds one GenPolicy call spends (upload + plan).
      planner: a planner of the registry; "chain" (default): GenPolicy's planner
        chain (chameleon, hybrid, hyperoffload, then the search, the first whose
        policy passes the checker at the budget), with executable=runtime.
      options: planner options ({"min-tensor-bytes": "1MiB"}; for the chain, one
        without a member name is its Chameleon's: "chameleon.min-tensor-bytes").
      token, tls_ca, tls_server_name: as swapplan.client.Planner.
    """

    def __init__(self, address, *, timeout_s=30.0, planner="chain", options=None,
                 token=None, tls_ca=None, tls_server_name=None):
        if timeout_s is None or timeout_s <= 0:
            raise ValueError("timeout_s must be positive, got %r" % (timeout_s,))
        self.address = address
        self.timeout_s = float(timeout_s)
        self.planner = planner
        self.options = dict(options or {})
        if planner == "chain":
            # GenPolicy's chain, limited to what the runtime executes; other
            # options without a member ("min-tensor-bytes") are its Chameleon's,
            # as `swapplan plan`'s flags are for the default provider.
            own = ("planners", "search-time-limit-ns", "search_time_limit_ns", "executable")
            self.options = {k if k in own or "." in k else "chameleon." + k: v
                            for k, v in self.options.items()}
            self.options.setdefault("executable", "runtime")
        self._client_args = dict(token=token, tls_ca=tls_ca, tls_server_name=tls_server_name)
        self._client = None
        self.stats = {"asked": 0, "policies": 0, "fallbacks": 0, "errors": 0,
                      "cache_hits": 0, "last_error": "", "seconds": 0.0}

    def _planner(self):
        if self._client is None:
            from swapplan.client import Planner  # grpcio only when a provider is used
            self._client = Planner(self.address, timeout_s=self.timeout_s, **self._client_args)
        return self._client

    def close(self):
        if self._client is not None:
            self._client.close()
            self._client = None

    def __call__(self, request):
        from swapplan.client import Cancelled, DeadlineExceeded, ResourceExhausted, Unavailable
        start = time.monotonic()
        deadline = start + self.timeout_s
        n = self.stats["asked"]
        self.stats["asked"] += 1
        try:
            with open(request["record_path"], "rb") as f:
                record = f.read()
            client = self._planner()
            uploaded = client.upload(record, name=os.path.basename(request["record_path"]),
                                     timeout_s=max(deadline - time.monotonic(), 0.001))
            result = client.plan(uploaded, planner=self.planner, options=self.options,
                                 iteration=request["iteration"],
                                 timeout_s=max(deadline - time.monotonic(), 0.001))
        except (Unavailable, DeadlineExceeded, ResourceExhausted, Cancelled) as e:
            self.stats["fallbacks"] += 1
            self.stats["last_error"] = str(e)
            _LOG.warning("swapplan.runtime: no policy from the planner service at %s for "
                         "runtime iteration %d (passive swaps go on; asked again at the next "
                         "GenPolicy iteration): %s", self.address,
                         request["runtime_iteration"], e)
            return None
        except Exception as e:
            self.stats["errors"] += 1
            self.stats["last_error"] = str(e)
            raise
        finally:
            self.stats["seconds"] += time.monotonic() - start
        path = os.path.join(request["work_dir"], "service-policy-%d.pb" % n)
        result.save(path)
        self.stats["policies"] += 1
        self.stats["cache_hits"] += int(result.cache_hit)
        return path
