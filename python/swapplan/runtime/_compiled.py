"""torch.compile regions under SwapRuntime (docs/runtime-torch.md "Misuse
rules" 5): detected and reported, never run unseen.

TorchDynamo does not compile a frame while a (non-infrastructure)
TorchDispatchMode is on the stack — SwapRuntime's op clock is one — and runs
it eagerly instead: every ATen op of a compiled region then goes through the
runtime (counted, planned, within the budget) and nothing is compiled. Dynamo
also marks the skipped code object as not to be compiled, so it stays eager
after the block too, until torch.compiler.reset(). That is correct for the
budget but silent, so the runtime says it:

  * a torch.compile'd module in `model=` (an OptimizedModule anywhere in it)
    at __enter__: stats["compiled_modules"];
  * every frame Dynamo skipped for the dispatch mode while the block ran
    (Dynamo's per-thread skip log, read at each iteration's end; as many
    as Dynamo logs — on 2.13 a frame's calls are not all logged once its
    code is marked skipped; torch 2.6 keeps no such log and only writes a
    DEBUG record "skipping: ... (reason: non-infra torch dispatch mode
    present ...)" to the logger torch._dynamo.convert_frame, which the
    runtime then counts with a filter while the block runs, dropping what
    the logger's own level would have dropped):
    stats["compiled_frames_run_eagerly"];
  * the first of either: one RuntimeWarning that says what happened.

A region compiled with fullgraph=True fails in torch itself ("found no
compiled frames"), which is the refusal. Torch without Dynamo (1.13): both
counts stay 0. Complexity: O(modules) at __enter__, O(skipped frames) per
iteration.
"""

import logging
import os
import sys
import warnings

_REASON = "dispatch mode"  # Dynamo's skip reason names the mode


def _dynamo_tls():
    """Dynamo's thread-local state holding the skip log, or None (Dynamo not
    imported: nothing was compiled in this process yet; torch 1.13)."""
    ef = sys.modules.get("torch._dynamo.eval_frame")
    return getattr(ef, "dynamo_tls", None) if ef is not None else None


_CONVERT_FRAME_LOGGER = "torch._dynamo.convert_frame"
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _own_frame(args):
    """A skip record of the runtime's own code (its dispatch mode's frames
    run under the region too): (name, reason, file) with file in swapplan."""
    return (isinstance(args, tuple) and len(args) == 3 and isinstance(args[2], str)
            and os.path.abspath(args[2]).startswith(_PACKAGE_DIR))


class _SkipRecords(logging.Filter):
    """Counts Dynamo's DEBUG "skipping ... dispatch mode" records (torch
    2.6) and lets through only what `level` (the logger's effective level
    before the runtime lowered it) would have."""

    def __init__(self, level):
        super().__init__()
        self.level = level
        self.count = 0

    def filter(self, record):
        if (record.levelno == logging.DEBUG and isinstance(record.msg, str)
                and record.msg.startswith("skipping")
                and _REASON in record.getMessage()
                and not _own_frame(record.args)):
            self.count += 1
        return record.levelno >= self.level


class CompiledRegions:
    def __init__(self):
        self.modules = 0
        self.frames = 0
        self.warning = None
        self._tls = None
        self._listening = False
        self._before = None
        self._logger = None  # torch 2.6: the convert_frame logger and its level
        self._records = None
        self._level = None
        self._exited = False  # after exit(): a late poll must not listen again

    def enter(self, model):
        self._exited = False
        if model is not None:
            self.modules = sum(1 for m in model.modules() if hasattr(m, "_orig_mod"))
        self._listen()
        if self.modules:
            self._warn("model= holds %d torch.compile'd module(s)" % self.modules)

    def _listen(self):
        if self._listening or self._exited:
            return
        tls = _dynamo_tls()
        if tls is None:
            return
        if not hasattr(tls, "skip_reasons"):
            if _CONVERT_FRAME_LOGGER not in sys.modules:
                return
            logger = logging.getLogger(_CONVERT_FRAME_LOGGER)
            self._logger, self._level = logger, logger.level
            self._records = _SkipRecords(logger.getEffectiveLevel())
            logger.addFilter(self._records)
            logger.setLevel(logging.DEBUG)
            self._listening = True
            return
        self._tls = tls
        self._before = tls.skip_reasons
        tls.skip_reasons = []
        self._listening = True

    def poll(self):
        """Counts the frames Dynamo ran eagerly since the last poll."""
        if not self._listening:
            self._listen()  # Dynamo imported inside the block
            return
        if self._records is not None:
            n, self._records.count = self._records.count, 0
            self._count(n)
            return
        reasons = self._tls.skip_reasons
        if not reasons:
            if reasons is None:
                self._tls.skip_reasons = []  # a fullgraph call reset it
            return
        n = sum(1 for r in reasons if _REASON in r)
        self._tls.skip_reasons = []
        self._count(n)

    def _count(self, n):
        if n:
            self.frames += n
            self._warn("%d frame(s) of torch.compile regions" % n)

    def exit(self):
        self._exited = True
        if not self._listening:
            return
        if self._records is not None:
            self._logger.removeFilter(self._records)
            self._logger.setLevel(self._level)
            self._logger = self._records = self._level = None
        else:
            self._tls.skip_reasons = self._before
        self._listening = False

    def _warn(self, what):
        if self.warning is not None:
            return
        self.warning = (
            "SwapRuntime: %s ran inside the block. TorchDynamo does not compile under a "
            "TorchDispatchMode (the runtime's op clock), so they run eagerly: every op is seen "
            "and kept within the budget, nothing is compiled (no speed-up), and Dynamo keeps "
            "that code eager after the block until torch.compiler.reset(). Compile outside "
            "SwapRuntime, or accept eager execution; stats['compiled_modules'], "
            "stats['compiled_frames_run_eagerly']; docs/runtime-torch.md" % what)
        warnings.warn(self.warning, RuntimeWarning, stacklevel=4)
