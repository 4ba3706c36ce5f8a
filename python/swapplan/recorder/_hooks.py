"""Phase, micro-batch and layer tracking from hooks, without touching the
user's code.

Phase of an op (first match):
  BACKWARD   inside the autograd engine's run_backward (loss.backward(),
             torch.autograd.grad, reentrant checkpointing)
  OPTIMIZER  inside optimizer.step() of an optimizer given to the Recorder
  FORWARD    grad mode on, and inside the root module's forward or after it
             (loss computation) until the backward pass starts
  OTHER      everything else: data preparation, zero_grad, gradient clipping
             after backward, validation under no_grad

The trace format requires, per iteration, each micro-batch's FORWARD ops
before its BACKWARD ops and no FORWARD/BACKWARD op after the first OPTIMIZER
op. ``PhaseTracker.op_phase`` enforces that: a FORWARD op after a BACKWARD op
opens a new micro-batch (gradient accumulation), and a FORWARD/BACKWARD op
after the optimizer started (e.g. an LBFGS closure) is written as OTHER and
counted in ``demoted_ops``.

How the hooks attach:
  root forward    Module.register_forward_pre_hook / register_forward_hook
  layers          the same on each top-level unit (children of the root, with
                  ModuleList / ModuleDict expanded); the layer hint of an op is
                  the index of the outermost unit running
  backward        torch.autograd.backward / torch.autograd.grad are wrapped
                  (so the gradient seed, ones_like(loss), made before the
                  engine starts is BACKWARD too), and torch.autograd.Variable.
                  _execution_engine is replaced by a proxy whose run_backward
                  brackets the real one, which catches every other Python
                  entry to the engine. All restored on exit.
  optimizer       optimizer.step is shadowed by an instance attribute that
                  brackets the original (restored on exit unless someone, e.g.
                  an LR scheduler, wrapped it again meanwhile; then the wrapper
                  stays and does nothing once the recording is over).
"""

import functools

import torch

from . import _model as M


def layer_units(model):
    """Top-level units of ``model``: (name, module) for each child, with
    ModuleList / ModuleDict containers (never called themselves) expanded."""
    units, seen = [], set()

    def visit(prefix, module):
        for name, child in module.named_children():
            full = prefix + name
            if isinstance(child, (torch.nn.ModuleList, torch.nn.ModuleDict)):
                visit(full + ".", child)
            elif id(child) not in seen:
                seen.add(id(child))
                units.append((full, child))

    visit("", model)
    return units


def repeated_layer_count(model):
    """Length of the longest ModuleList in ``model`` (the transformer blocks of
    most LLM implementations); 0 when there is none."""
    best = 0
    for module in model.modules():
        if isinstance(module, torch.nn.ModuleList):
            best = max(best, len(module))
    return best


class PhaseTracker:
    def __init__(self, model, on_backward_end, on_optimizer_end):
        self.model = model
        self.fwd_depth = 0
        self.bwd_depth = 0
        self.opt_depth = 0
        self.after_forward = False
        self.unit_stack = []
        self.units = []
        # Dotted paths (model.named_modules()) of the modules whose forward is
        # running, innermost last: names the tensors ops produce there.
        self.module_stack = []
        self.demoted_ops = 0
        self._on_backward_end = on_backward_end
        self._on_optimizer_end = on_optimizer_end
        self._handles = []
        self._engine = None
        self._optimizers = []  # (optimizer, wrapper, previous instance attribute or None)
        self.active = False
        self.new_iteration()

    # ---- per-op ---------------------------------------------------------
    def new_iteration(self):
        self.micro_batch = 0
        self.micro_batch_has_backward = False
        self.optimizer_started = False
        self.after_forward = False

    def op_phase(self):
        """(phase, micro_batch or -1) of the op being dispatched now."""
        if self.bwd_depth:
            phase = M.BACKWARD
        elif self.opt_depth:
            phase = M.OPTIMIZER
        elif torch.is_grad_enabled() and (self.model is None or self.fwd_depth or
                                          self.after_forward):
            phase = M.FORWARD
        else:
            return M.OTHER, -1
        if phase == M.OPTIMIZER:
            self.optimizer_started = True
            return phase, -1
        if self.optimizer_started:
            self.demoted_ops += 1
            return M.OTHER, -1
        if phase == M.BACKWARD:
            self.micro_batch_has_backward = True
        elif self.micro_batch_has_backward:
            self.micro_batch += 1
            self.micro_batch_has_backward = False
        return phase, self.micro_batch

    def layer(self):
        return self.unit_stack[0] if self.unit_stack else -1

    def module_path(self):
        """Dotted path of the innermost module whose forward is running ("" outside)."""
        return self.module_stack[-1] if self.module_stack else ""

    # ---- installation ---------------------------------------------------
    def install(self, optimizers, layer_hints, module_names=True):
        self.active = True
        self.module_stack = []
        if self.model is not None:
            self._handles.append(self.model.register_forward_pre_hook(self._forward_pre))
            self._handles.append(self.model.register_forward_hook(self._forward_post))
            if module_names:
                for name, module in self.model.named_modules():
                    if not name:
                        continue  # the root: its ops get no prefix
                    self._handles.append(module.register_forward_pre_hook(
                        functools.partial(self._module_pre, name)))
                    self._handles.append(module.register_forward_hook(self._module_post))
            if layer_hints:
                self.units = layer_units(self.model)
                for index, (_, unit) in enumerate(self.units):
                    self._handles.append(unit.register_forward_pre_hook(
                        functools.partial(self._unit_pre, index)))
                    self._handles.append(unit.register_forward_hook(self._unit_post))
        variable = torch.autograd.Variable
        self._engine = variable._execution_engine
        variable._execution_engine = _EngineProxy(self._engine, self)
        self._autograd_functions = {}
        for name in ("backward", "grad"):
            original = getattr(torch.autograd, name)
            self._autograd_functions[name] = original
            setattr(torch.autograd, name, self._bracket_backward(original))
        for opt in optimizers:
            self._wrap_optimizer(opt)

    def uninstall(self):
        self.active = False
        for h in self._handles:
            h.remove()
        self._handles = []
        variable = torch.autograd.Variable
        if isinstance(variable._execution_engine, _EngineProxy):
            variable._execution_engine = self._engine
        for name, original in getattr(self, "_autograd_functions", {}).items():
            if getattr(getattr(torch.autograd, name), "__wrapped__", None) is original:
                setattr(torch.autograd, name, original)
        self._autograd_functions = {}
        for opt, wrapper, previous in self._optimizers:
            if opt.__dict__.get("step") is wrapper:
                if previous is None:
                    del opt.step
                else:
                    opt.step = previous
        self._optimizers = []

    def _bracket_backward(self, original):
        tracker = self

        @functools.wraps(original)
        def bracketed(*args, **kwargs):
            if not tracker.active:
                return original(*args, **kwargs)
            tracker.backward_begin()
            try:
                return original(*args, **kwargs)
            finally:
                tracker.backward_end()

        return bracketed

    def _wrap_optimizer(self, opt):
        previous = opt.__dict__.get("step")
        inner = opt.step
        tracker = self

        @functools.wraps(inner)
        def step(*args, **kwargs):
            if not tracker.active:
                return inner(*args, **kwargs)
            tracker.opt_depth += 1
            try:
                return inner(*args, **kwargs)
            finally:
                tracker.opt_depth -= 1
                if tracker.opt_depth == 0:
                    tracker._on_optimizer_end(opt)

        opt.step = step
        self._optimizers.append((opt, step, previous))

    # ---- hooks ------------------------------------------------------------
    def _forward_pre(self, module, inputs):
        self.fwd_depth += 1

    def _forward_post(self, module, inputs, output):
        self.fwd_depth -= 1
        if self.fwd_depth == 0 and torch.is_grad_enabled():
            self.after_forward = True

    def _module_pre(self, name, module, inputs):
        self.module_stack.append(name)

    def _module_post(self, module, inputs, output):
        if self.module_stack:
            self.module_stack.pop()

    def _unit_pre(self, index, module, inputs):
        self.unit_stack.append(index)

    def _unit_post(self, module, inputs, output):
        if self.unit_stack:
            self.unit_stack.pop()

    def backward_begin(self):
        self.bwd_depth += 1

    def backward_end(self):
        self.bwd_depth -= 1
        if self.bwd_depth == 0:
            self.after_forward = False
            self._on_backward_end()


class _EngineProxy:
    """Stands in for torch.autograd.Variable._execution_engine."""

    def __init__(self, engine, tracker):
        self._engine = engine
        self._tracker = tracker

    def run_backward(self, *args, **kwargs):
        if not self._tracker.active:
            return self._engine.run_backward(*args, **kwargs)
        self._tracker.backward_begin()
        try:
            return self._engine.run_backward(*args, **kwargs)
        finally:
            self._tracker.backward_end()

    def __getattr__(self, name):
        return getattr(self._engine, name)
