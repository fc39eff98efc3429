"""Fake (abstract) versions of the compiled-program classes and the operators'
fake (Meta) kernels, so torch.compile and FakeTensor tracing can take programs
through a graph. (They live here rather than in C++: under torch.compile a
program arrives as a Python FakeScriptObject, which a C++ kernel cannot take.)"""
import json

import torch


def _register():
    try:
        register_fake_class = torch._library.register_fake_class
    except AttributeError:  # older torch: tracing through the ops is then not available
        return

    @register_fake_class("qfleet::CircuitProgram")
    class FakeCircuitProgram:
        def __init__(self, text):
            real = torch.classes.qfleet.CircuitProgram(text)
            self._json = text
            self._sizes = (real.n_qubits(), real.n_inputs(), real.n_weights(), real.n_outputs())

        @classmethod
        def __obj_unflatten__(cls, flat):
            return cls(dict(flat)["json"])

        def n_qubits(self):
            return self._sizes[0]

        def n_inputs(self):
            return self._sizes[1]

        def n_weights(self):
            return self._sizes[2]

        def n_outputs(self):
            return self._sizes[3]

        def json(self):
            return self._json

        def precision(self):
            return json.loads(self._json).get("precision", "complex128")

        def isa(self):
            return "fake"

    @register_fake_class("qfleet::OpenSystemProgram")
    class FakeOpenSystemProgram:
        def __init__(self, text):
            real = torch.classes.qfleet.OpenSystemProgram(text)
            self._json = text
            self._sizes = (real.dim(), real.n_segments(), real.n_controls(), real.n_drift_terms(), real.n_jumps(),
                           real.final_state_size())

        @classmethod
        def __obj_unflatten__(cls, flat):
            return cls(dict(flat)["json"])

        def dim(self):
            return self._sizes[0]

        def n_segments(self):
            return self._sizes[1]

        def n_controls(self):
            return self._sizes[2]

        def n_drift_terms(self):
            return self._sizes[3]

        def n_jumps(self):
            return self._sizes[4]

        def final_state_size(self):
            return self._sizes[5]

        def json(self):
            return self._json


    def _batch(op, *pairs):
        b = None
        for t, rank in pairs:
            if t is not None and t.dim() == rank:
                if b is not None and t.shape[0] != b:
                    raise ValueError(f"qfleet.{op}: per-task arguments must agree on the batch size")
                b = t.shape[0]
        return 1 if b is None else b

    def _same_device(op, *ts):
        devs = {t.device for t in ts if t is not None}
        if len(devs) > 1:
            raise ValueError(f"qfleet.{op}: all tensors must be on one device, got {', '.join(map(str, devs))}")

    @torch.library.register_fake("qfleet::circuit_forward")
    def _circuit_forward(program, inputs, weights):
        _same_device("circuit_forward", inputs, weights)
        if inputs.dim() != 2:
            raise ValueError(f"qfleet.circuit_forward: inputs has {inputs.dim()} dimension(s); expected 2")
        return inputs.new_empty(inputs.shape[0], program.n_outputs())

    @torch.library.register_fake("qfleet::circuit_backward")
    def _circuit_backward(program, inputs, weights, grad_outputs):
        return torch.empty_like(inputs), torch.empty_like(weights)

    @torch.library.register_fake("qfleet::open_forward")
    def _open_forward(program, amplitudes, drift_coeffs, rates):
        _same_device("open_forward", amplitudes, drift_coeffs, rates)
        b = _batch("open_forward", (amplitudes, 3), (drift_coeffs, 2), (rates, 2))
        return amplitudes.new_empty(b)

    @torch.library.register_fake("qfleet::open_backward")
    def _open_backward(program, amplitudes, drift_coeffs, rates, grad_fidelity):
        def like(t):
            return None if t is None else torch.empty_like(t)
        return torch.empty_like(amplitudes), like(drift_coeffs), like(rates)

    @torch.library.register_fake("qfleet::open_final_state")
    def _open_final_state(program, amplitudes, drift_coeffs, rates):
        b = _batch("open_final_state", (amplitudes, 3), (drift_coeffs, 2), (rates, 2))
        d = program.dim()
        ctype = torch.complex64 if amplitudes.dtype == torch.float32 else torch.complex128
        n = program.final_state_size()
        shape = (b, d) if n == d else (b, d, d) if n == d * d else (b, d * d, d * d)
        return amplitudes.new_empty(shape, dtype=ctype)

    # Autograd, registered from Python too so that torch.compile (AOTAutograd) can
    # trace the backward with fake programs; it calls the same backward operators
    # as the C++ autograd kernels (adapters/torch/src/ops.cpp), which C++ callers use.
    def _circuit_setup(ctx, inputs, output):
        program, x, w = inputs
        ctx.program = program
        ctx.save_for_backward(x, w)

    def _circuit_grad(ctx, g):
        x, w = ctx.saved_tensors
        gx, gw = torch.ops.qfleet.circuit_backward(ctx.program, x, w, g.contiguous())
        return None, (gx if ctx.needs_input_grad[1] else None), (gw if ctx.needs_input_grad[2] else None)

    torch.library.register_autograd("qfleet::circuit_forward", _circuit_grad, setup_context=_circuit_setup)

    def _open_setup(ctx, inputs, output):
        program, a, c, r = inputs
        ctx.program = program
        ctx.save_for_backward(a, c, r)

    def _open_grad(ctx, g):
        a, c, r = ctx.saved_tensors
        ga, gc, gr = torch.ops.qfleet.open_backward(ctx.program, a, c, r, g.contiguous())
        need = ctx.needs_input_grad
        return None, (ga if need[1] else None), (gc if need[2] else None), (gr if need[3] else None)

    torch.library.register_autograd("qfleet::open_forward", _open_grad, setup_context=_open_setup)

    def _no_double_backward(op):
        def grad(ctx, *grads):
            raise RuntimeError(f"qfleet.{op}: second derivatives are not implemented (the adjoint method gives "
                               "exact first derivatives); use first-order methods, or finite differences of the "
                               "gradients")
        return grad

    torch.library.register_autograd("qfleet::circuit_backward", _no_double_backward("circuit_backward"),
                                    setup_context=lambda ctx, inputs, output: None)
    torch.library.register_autograd("qfleet::open_backward", _no_double_backward("open_backward"),
                                    setup_context=lambda ctx, inputs, output: None)


_register()
