"""The default policy provider: `swapplan plan` on the runtime's record.

At GenPolicy the runtime writes the iteration it just ran as a trace
(genpolicy-N.json.gz in its work directory: the ops as dispatched, every
storage with its exact bytes, the swaps it did, the device model and measured
op times) and asks the provider for a policy. This one runs

    swapplan plan RECORD --iteration I -o WORK_DIR/policy-N.pb [planner_args]

(``planner="chameleon"``; the budget and bandwidths are the record's) and
returns the policy's path. The default, ``planner="chain"``, is GenPolicy's
planner chain (planners/chain.h: chameleon, hybrid, hyperoffload, then the
search, the first whose policy passes the checker at the budget and that the
runtime can execute; `swapplan compare --planners chain --planner-option
chain.executable=runtime`); `planner_args` in `swapplan plan`'s form
(``["--min-tensor-bytes", "1KiB"]``) are given to its Chameleon
(``--planner-option chain.chameleon.min-tensor-bytes=1KiB``). The policy
names the planner that served (its ``planner`` field). With
``planner=NAME`` (any planner `swapplan compare --planners` knows:
recompute, hybrid, ...) it runs

    swapplan compare RECORD --iteration I --planners NAME --save-policies DIR [planner_args]
    swapplan policy upgrade DIR/NAME.json --trace RECORD --iteration I -o WORK_DIR/policy-N.pb

instead (compare writes JSON policies; the runtime reads the binary form); the runtime loads it (a self-contained, v2 policy)
and runs it in the next iteration. A planner failure (no feasible policy)
is the provider's error: the runtime records it in the iteration's row and
training goes on.

Keyed policies (SwapRuntime's policies_by_input, planning="observed"): the
request also carries its key (input_signature_hash / _bytes) and the key's
observed records (observed_record_paths, oldest first, record_path last).
This provider plans on record_path alone, the iteration just run:
`swapplan plan` and `swapplan compare` plan and simulate one trace iteration
and have no way to verify a policy on several records. Verifying on all of
them and lowering the budget until every one fits is what `swapplan replay
--execute`'s C++ provider does; a callable provider may do the same with the
paths it is given.

The `swapplan` binary is $SWAPPLAN_BINARY, the build tree's build/swapplan,
`swapplan` on PATH, or the one pip installed beside the interpreter.
"""

import os
import shutil
import subprocess
import sys


def find_swapplan_binary():
    env = os.environ.get("SWAPPLAN_BINARY")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    built = os.path.normpath(os.path.join(here, "..", "..", "..", "build", "swapplan"))
    if os.path.exists(built):
        return built
    found = shutil.which("swapplan")
    if found:
        return found
    # pip's script beside the interpreter (.venv/bin/python3 run without the
    # venv activated).
    beside = os.path.join(os.path.dirname(sys.executable), "swapplan")
    if os.path.exists(beside):
        return beside
    raise FileNotFoundError("the swapplan binary was not found: build it (ninja -C build) or set "
                            "SWAPPLAN_BINARY")


def chain_planner_args(args):
    """`swapplan plan` flags (Chameleon's options) as the chain's member options.

    ["--min-tensor-bytes", "1KiB"] -> ["--planner-option", "chain.chameleon.min-tensor-bytes=1KiB"];
    --planner-option arguments pass as they are.
    """
    out, i, args = [], 0, list(args)
    while i < len(args):
        a = args[i]
        if a == "--planner-option" and i + 1 < len(args):
            out += [a, args[i + 1]]
            i += 2
        elif a.startswith("--") and "=" in a:
            out += ["--planner-option", "chain.chameleon." + a[2:]]
            i += 1
        elif a.startswith("--") and i + 1 < len(args):
            out += ["--planner-option", "chain.chameleon.%s=%s" % (a[2:], args[i + 1])]
            i += 2
        else:
            out.append(a)
            i += 1
    return out


class SwapplanPlanProvider:
    """Callable provider: request dict -> policy path."""

    def __init__(self, binary=None, planner_args=(), timeout_s=300, planner="chain"):
        self.binary = binary
        self.planner = planner
        self.planner_args = list(planner_args)
        self.timeout_s = timeout_s
        self.count = 0

    def __call__(self, request):
        binary = self.binary or find_swapplan_binary()
        out = os.path.join(request["work_dir"], "policy-%d.pb" % self.count)
        self.count += 1
        record, iteration = request["record_path"], str(request["iteration"])
        if self.planner == "chameleon":
            self._run([binary, "plan", record, "--iteration", iteration, "-o", out]
                      + self.planner_args, "plan")
            return out
        saved = os.path.join(request["work_dir"], "compare-%d" % (self.count - 1))
        args = self.planner_args
        if self.planner == "chain":
            args = ["--planner-option", "chain.executable=runtime"] + chain_planner_args(args)
        # Exit 3: no planner reached the budget; its policy is still written.
        p = self._run([binary, "compare", record, "--iteration", iteration, "--planners",
                       self.planner, "--save-policies", saved] + args, "compare", (0, 3))
        policy = os.path.join(saved, self.planner + ".json")
        if not os.path.exists(policy):
            # compare's verdict line for the planner says why (infeasible, ...).
            why = [ln.strip() for ln in (p.stdout + p.stderr).splitlines()
                   if ln.startswith(self.planner + ":") or ln.startswith("swapplan:")]
            raise RuntimeError("swapplan compare wrote no policy for planner %s: %s"
                               % (self.planner, "; ".join(why) or "no reason given"))
        self._run([binary, "policy", "upgrade", policy, "--trace", record, "--iteration",
                   iteration, "-o", out], "policy upgrade")
        return out

    def _run(self, cmd, what, ok=(0,)):
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=self.timeout_s)
        if p.returncode not in ok:
            raise RuntimeError("swapplan %s exited %d: %s" % (what, p.returncode,
                                                             (p.stderr or p.stdout).strip()))
        return p
