"""One training step of the hybrid CNN + quantum-circuit Fashion-MNIST classifier
(the architecture of qfleet-classify) with its quantum layer from qfleet or from
PennyLane, on the same model, weights and batch, in one run.

    PYTHONPATH=python \
        python bench/compare/classify.py [--threads 2] [--batch 64] [--seed 0] [--json out.json] [--md out.md] \
        [--quick]

(or with the pip-installed package). OMP_NUM_THREADS defaults to --threads and OMP_WAIT_POLICY
to passive (see below, where they are set). Needs torch, pennylane, pennylane-lightning and
Debian's Fashion-MNIST (`apt-get install dataset-fashion-mnist`).

Model: Conv2d(1,16,3,p=1) ReLU MaxPool2 Conv2d(16,32,3,p=1) ReLU MaxPool2 AdaptiveAvgPool(4)
Flatten Linear(512,64) ReLU -> Linear(64,4) -> angles = pi/2 tanh(z) -> quantum layer on 4
qubits in float64 (AngleEmbedding with RX, 3 StronglyEntanglingLayers = 36 weights,
<Z_i> on every wire) -> Linear(4,10); cross-entropy; Adam lr 1e-3.

Variants of the quantum layer:
  qfleet                  qfleet.QuantumLayer (complex128)
  default.qubit backprop  qml.qnn.TorchLayer, default.qubit, diff_method="backprop"
  default.qubit p-shift   qml.qnn.TorchLayer, default.qubit, diff_method="parameter-shift",
                          one tape per sample (qml.transforms.broadcast_expand: PennyLane's
                          parameter-shift refuses a batch broadcast over trainable angles)
  lightning adjoint       qml.qnn.TorchLayer, lightning.qubit, diff_method="adjoint"
  classical floor         Linear(4,4) + tanh in float32 instead of the circuit

Before anything is timed the quantum variants are checked against qfleet: the layer alone
(float64 outputs and gradients w.r.t. angles and weights on the model's angles of 8 images,
to 1e-10; lightning.qubit to 1e-6, since PennyLane's torch interface hands its results back
in float32) and the whole model (logits, loss and every parameter's gradient, to 1e-4 of each
tensor's largest value, the trunk being float32; harness.check_close). A disagreement stops the
script with exit status 1.

Measured per variant: "step" = zero_grad + forward + cross-entropy + backward + Adam step
at the batch size; "quantum layer" = the layer's forward + backward (gradients w.r.t. its
input angles and its weights, cotangent fixed) on the same activations, casts included;
"share" = quantum layer / step. Figures are the median (with min and max) over repeats,
after a warm-up; repeats are adaptive (at least 3, about 10 s per figure; --quick: 1 and
about 1 s). This is a benchmark: the targets (qfleet step >= 100x faster than default.qubit
parameter-shift and >= 10x faster than lightning adjoint, quantum layer <= 5% of the qfleet
step) are printed beside the figures, never asserted.
"""
import copy
import gzip
import itertools
import math
import os
import pathlib
import platform
import struct
import sys
import time

import harness

N_QUBITS, N_LAYERS = 4, 3
N_WEIGHTS = N_LAYERS * N_QUBITS * 3
N_CLASSES, IMAGE_SIDE = 10, 28
N_BATCHES = 4  # the timed steps cycle over this many real batches
DATA_DIR = pathlib.Path("/usr/share/datasets/fashion-mnist")
IDX_IMAGES_MAGIC, IDX_LABELS_MAGIC = 0x00000803, 0x00000801
LAYER_TOL = 1e-10  # float64 quantum layer: qfleet and PennyLane both compute exactly
# PennyLane's torch interface turns lightning.qubit's results (Python floats) into tensors of
# torch's default dtype, float32, so that variant agrees only to float32 rounding (~1e-7).
LAYER_TOL_FLOAT32_RESULTS = 1e-6
LAYER_CHECK_ROWS = 8  # the layer-alone check on a few samples: parameter-shift takes seconds per batch
MODEL_RTOL = 1e-4  # float32 trunk: a 1-ulp difference after .float() may propagate
PENNYLANE_VARIANTS = [  # (name, device, diff_method, tolerance of the layer-alone check)
    ("default.qubit backprop", "default.qubit", "backprop", LAYER_TOL),
    ("default.qubit p-shift", "default.qubit", "parameter-shift", LAYER_TOL),
    ("lightning adjoint", "lightning.qubit", "adjoint", LAYER_TOL_FLOAT32_RESULTS),
]
QFLEET, FLOOR = "qfleet", "classical floor"
# Targets this benchmark informs (printed, not asserted): minimum speed-up of qfleet's step.
STEP_RATIO_TARGETS = {"default.qubit p-shift": 100.0, "lightning adjoint": 10.0}
QFLEET_SHARE_TARGET_PERCENT = 5.0


def parse_args():
    ap = harness.parser(__doc__.split("\n\n")[0], threads=2, seed=0, quick_help="few repeats: a smoke test")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--data", default=str(DATA_DIR), help="folder with train-*-idx*-ubyte.gz")
    args = harness.validate(ap, ap.parse_args())
    if args.batch < 1:
        ap.error("--batch must be positive")
    return args


ARGS = parse_args()
# Both set before the imports: OpenMP runtimes read them once, when they load.
# lightning.qubit sizes its OpenMP pool from OMP_NUM_THREADS, so every variant runs on --threads.
# OpenMP threads spin after each parallel region by default, and lightning.qubit brings its own
# libgomp pool beside torch's (which qfleet shares). On a busy 2-core machine spinning threads
# starved the working ones: the CNN step alone took 370 ms (median) instead of 18 ms passive, and
# lightning's layer 60 s per call instead of 0.4 s. Set OMP_WAIT_POLICY to measure otherwise.
harness.threads_env(ARGS.threads, passive=True)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import qfleet  # noqa: E402

try:
    import pennylane as qml  # noqa: E402
    import pennylane_lightning  # noqa: E402,F401  (a missing plugin fails here, not mid-run)
except ImportError as e:
    sys.exit(f"classify: needs PennyLane and its lightning plugin ({e}); "
             "pip install pennylane pennylane-lightning")


def fail(message):
    harness.fail("classify", message)


# ---- data: the first few batches of Fashion-MNIST's training set --------------------------

def read_idx(path, magic, item_shape, count):
    """The first `count` items of a gzipped IDX file (big-endian header: magic, then one
    uint32 per dimension), as uint8 [count, *item_shape]."""
    if not path.exists():
        sys.exit(f"classify: {path} not found: install Debian's Fashion-MNIST with "
                 "`apt-get install dataset-fashion-mnist` (or pass --data DIR)")
    with gzip.open(path, "rb") as f:
        (found,) = struct.unpack(">I", f.read(4))
        if found != magic:
            sys.exit(f"classify: {path}: IDX magic 0x{found:08x}, expected 0x{magic:08x}")
        dims = struct.unpack(f">{1 + len(item_shape)}I", f.read(4 * (1 + len(item_shape))))
        if tuple(dims[1:]) != tuple(item_shape):
            sys.exit(f"classify: {path}: items of shape {dims[1:]}, expected {item_shape}")
        if dims[0] < count:
            sys.exit(f"classify: {path}: {dims[0]} items, {count} needed")
        n_bytes = count * math.prod(item_shape)
        raw = f.read(n_bytes)
        if len(raw) != n_bytes:
            sys.exit(f"classify: {path}: truncated ({len(raw)} of {n_bytes} bytes)")
    return np.frombuffer(raw, dtype=np.uint8).reshape(count, *item_shape)


def load_batches(data_dir, batch, n_batches):
    """[(images [B,1,28,28] float32 in [0,1], labels [B] int64)] * n_batches."""
    count = batch * n_batches
    data_dir = pathlib.Path(data_dir)
    images = read_idx(data_dir / "train-images-idx3-ubyte.gz", IDX_IMAGES_MAGIC, (IMAGE_SIDE, IMAGE_SIDE), count)
    labels = read_idx(data_dir / "train-labels-idx1-ubyte.gz", IDX_LABELS_MAGIC, (), count)
    if labels.max() >= N_CLASSES:
        sys.exit(f"classify: label {labels.max()} out of range in {data_dir}")
    x = torch.from_numpy(images.astype(np.float32) / 255.0).view(n_batches, batch, 1, IMAGE_SIDE, IMAGE_SIDE)
    y = torch.from_numpy(labels.astype(np.int64)).view(n_batches, batch)
    return [(x[i].contiguous(), y[i].contiguous()) for i in range(n_batches)]


# ---- the model ---------------------------------------------------------------------------------

class Float64Layer(torch.nn.Module):
    """Runs a circuit layer in float64 inside the float32 model, as qfleet-classify does."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, angles):
        return self.inner(angles.double()).float()


class HybridClassifier(torch.nn.Module):
    def __init__(self, middle):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.AdaptiveAvgPool2d(4), torch.nn.Flatten(), torch.nn.Linear(512, 64), torch.nn.ReLU())
        self.to_angles = torch.nn.Linear(64, N_QUBITS)
        self.middle = middle
        self.head = torch.nn.Linear(N_QUBITS, N_CLASSES)

    def angles(self, images):
        # tanh keeps the RX angles in (-pi/2, pi/2): distinct features stay distinguishable on the Bloch sphere.
        return (math.pi / 2) * torch.tanh(self.to_angles(self.features(images)))

    def forward(self, images):
        return self.head(self.middle(self.angles(images)))


def build_model(middle, classical_template):
    """The variant's model with the template's classical weights (identical in every variant)."""
    model = HybridClassifier(middle)
    for name in ("features", "to_angles", "head"):
        setattr(model, name, copy.deepcopy(getattr(classical_template, name)))
    return model


def qfleet_circuit_layer(threads):
    c = qfleet.Circuit(N_QUBITS)
    wires = list(range(N_QUBITS))
    c.angle_embedding(wires, rotation="X").strongly_entangling_layers(wires, N_LAYERS)
    for q in wires:
        c.expval(f"Z{q}")
    return qfleet.QuantumLayer(c, precision="complex128", num_threads=threads, seed=1)


def pennylane_qnode(device_name, diff_method):
    dev = qml.device(device_name, wires=N_QUBITS)

    @qml.qnode(dev, interface="torch", diff_method=diff_method)
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(N_QUBITS), rotation="X")
        qml.StronglyEntanglingLayers(weights, wires=range(N_QUBITS))
        # a list (not a tuple): TorchLayer then stacks the expectations into [B, 4]
        return [qml.expval(qml.PauliZ(q)) for q in range(N_QUBITS)]

    if diff_method == "parameter-shift":
        # PennyLane's parameter-shift refuses tapes broadcast over a trainable parameter (the
        # angles here; https://github.com/PennyLaneAI/pennylane/issues/4462), so the batch is
        # split into one tape per sample, which is what a user of this configuration gets to run.
        return qml.transforms.broadcast_expand(circuit)
    return circuit


def qfleet_to_pennylane_weights(flat):
    """qfleet's StronglyEntanglingLayers reads weight[(l * n + q) * 3 + k] as Rot angle k of
    wire q in layer l, i.e. a C-order reshape to PennyLane's [L, n, 3] (checked in
    verify_weight_mapping)."""
    return flat.reshape(N_LAYERS, N_QUBITS, 3)


def pennylane_torch_layer(device_name, diff_method, qfleet_weight):
    weights = qfleet_to_pennylane_weights(qfleet_weight.detach()).clone()  # float64, like qfleet's
    return qml.qnn.TorchLayer(pennylane_qnode(device_name, diff_method),
                              weight_shapes={"weights": (N_LAYERS, N_QUBITS, 3)},
                              init_method={"weights": weights})


# ---- agreement, before any timing --------------------------------------------------------------

def max_relative_difference(a, b):
    """max|a - b| relative to max(|b|) (b the qfleet side), so that a tensor of small gradients
    is judged on its own scale."""
    return harness.max_error(a, b, relative=True)[0]


def layer_outputs_and_gradients(layer, angles, cotangent):
    x = angles.detach().clone().requires_grad_()
    out = layer(x)
    (weight,) = layer.parameters()  # qfleet's [36] or PennyLane's [L, n, 3]
    grad_x, grad_w = torch.autograd.grad(out, [x, weight], cotangent)
    return out.detach(), grad_x, grad_w.reshape(-1)  # C-order flattening: qfleet's layout


def verify_weight_mapping(qfleet_layer, angles, cotangent):
    """PennyLane on qfleet_to_pennylane_weights(qfleet's weight) gives qfleet's outputs to
    LAYER_TOL, and reading the flat vector with the axes (L, n, 3) in any other order does not,
    so the check identifies the mapping. Returns both figures."""
    if qfleet_layer.program.n_weights() != N_WEIGHTS:
        fail(f"qfleet's circuit has {qfleet_layer.program.n_weights()} weights, expected {N_WEIGHTS}")
    q_out, _, _ = layer_outputs_and_gradients(qfleet_layer, angles, cotangent)
    ref = pennylane_qnode("default.qubit", "backprop")
    w = qfleet_layer.weight.detach()
    sizes = {"L": N_LAYERS, "n": N_QUBITS, "k": 3}

    def difference(weights):
        return max_relative_difference(torch.stack(ref(angles.detach(), weights), 1), q_out)

    chosen = difference(qfleet_to_pennylane_weights(w))
    if not chosen <= LAYER_TOL:
        fail(f"weight mapping: PennyLane on qfleet_to_pennylane_weights(qfleet's weight) disagrees with qfleet "
             f"(relative difference {chosen:.2e} > {LAYER_TOL:g})")
    others = []
    for order in itertools.permutations("Lnk"):
        if order == tuple("Lnk"):
            continue
        # read the flat vector as [order...] and bring the axes back to PennyLane's [L, n, k]
        as_read = w.reshape(*[sizes[a] for a in order])
        others.append(difference(as_read.permute(*[order.index(a) for a in "Lnk"]).contiguous()))
    wrong = min(others)
    if wrong < 1e-3:
        fail(f"weight mapping: another axis order also agrees ({wrong:.2e}); the check does not identify it")
    return chosen, wrong


def verify_layers(layers, angles, cotangent):
    """Each PennyLane layer against qfleet's, float64: outputs, d/d angles, d/d weights."""
    q_out, q_gx, q_gw = layer_outputs_and_gradients(layers[QFLEET], angles, cotangent)
    worst = {}
    for name, _, _, tol in PENNYLANE_VARIANTS:
        out, gx, gw = layer_outputs_and_gradients(layers[name], angles, cotangent)
        worst[name] = harness.check_close(f"quantum layer {name!r} against qfleet's", (out, gx, gw),
                                          (q_out, q_gx, q_gw),
                                          rtol=tol, prog="classify", quiet=True)
    return worst


def model_forward_backward(model, images, labels):
    model.zero_grad(set_to_none=True)
    logits = model(images)
    loss = F.cross_entropy(logits, labels)
    loss.backward()
    grads = {}
    for name, p in model.named_parameters():
        if p.grad is None:
            fail(f"parameter {name} got no gradient")
        grads[name] = p.grad.detach().clone()
    return logits.detach(), loss.detach(), grads


def verify_models(models, images, labels):
    """Logits, loss and every parameter's gradient of each quantum variant against qfleet's."""
    q_logits, q_loss, q_grads = model_forward_backward(models[QFLEET], images, labels)
    q_weight_grad = q_grads.pop("middle.inner.weight")
    worst = {}
    for name, model in models.items():
        if name in (QFLEET, FLOOR):
            continue
        logits, loss, grads = model_forward_backward(model, images, labels)
        diffs = {"logits": max_relative_difference(logits, q_logits), "loss": max_relative_difference(loss, q_loss),
                 "circuit weights' gradient": max_relative_difference(
                     qfleet_to_pennylane_weights(grads.pop("middle.inner.weights")).reshape(-1), q_weight_grad)}
        if grads.keys() != q_grads.keys():
            fail(f"{name}: parameters {sorted(grads)} differ from qfleet's {sorted(q_grads)}")
        for pname in q_grads:
            diffs[f"{pname}'s gradient"] = max_relative_difference(grads[pname], q_grads[pname])
        worst[name] = harness.check_close(f"model with {name!r} against qfleet's", diffs, {k: 0.0 for k in diffs},
                                          atol=MODEL_RTOL, prog="classify", quiet=True)
    model_forward_backward(models[FLOOR], images, labels)  # the floor only has to run
    return worst


# ---- timing ------------------------------------------------------------------------------------

def measure(fn, min_repeats, budget_s, max_samples=200):
    """Per-call seconds: median, min, max over adaptive repeats. One sample groups enough
    calls to last about 2 ms, so that microsecond layers are not timer noise."""
    t0 = time.perf_counter()
    fn()  # warm-up: first-call costs (tracing, allocation, caches) stay out of the samples
    first = time.perf_counter() - t0
    warm_calls = 0
    while time.perf_counter() - t0 < min(0.1 * budget_s, 0.5) and warm_calls < 50:
        fn()
        warm_calls += 1
    per_call = (time.perf_counter() - t0 - first) / warm_calls if warm_calls else first
    number = max(1, int(0.002 / max(per_call, 1e-9)))
    t = harness.timed(fn, repeats=min_repeats, budget_s=budget_s, number=number, max_repeats=max_samples, warmup=0)
    return {"median_ms": t.median * 1e3, "min_ms": t.min * 1e3, "max_ms": t.max * 1e3, "repeats": t.reps,
            "calls_per_repeat": number}


def time_variant(model, batches, min_repeats, budget_s):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    cycle = itertools.cycle(batches)

    def step():
        images, labels = next(cycle)
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(model(images), labels).backward()
        optimizer.step()

    step_figures = measure(step, min_repeats, budget_s)
    # the layer alone, on the activations it sees in a step of the (now trained a little) model
    with torch.no_grad():
        angles = model.angles(batches[0][0])
    x = angles.clone().requires_grad_()
    cotangent = torch.randn(angles.shape, generator=torch.Generator().manual_seed(7))
    params = [x] + list(model.middle.parameters())
    layer_figures = measure(lambda: torch.autograd.grad(model.middle(x), params, cotangent), min_repeats, budget_s)
    return step_figures, layer_figures


# ---- report ------------------------------------------------------------------------------------

def spread(figures, digits):
    return f"({figures['min_ms']:.{digits}f}-{figures['max_ms']:.{digits}f})"


def target_note(name, ratio, share):
    if name in STEP_RATIO_TARGETS:
        goal = STEP_RATIO_TARGETS[name]
        return f"target >= {goal:g}x: {'met' if ratio >= goal else 'missed'}"
    if name == QFLEET:
        goal = QFLEET_SHARE_TARGET_PERCENT
        return f"target share <= {goal:g}%: {'met' if share <= goal else 'missed'}"
    return ""


def main():
    torch.set_num_threads(ARGS.threads)
    # --quick: one repeat of parameter-shift's multi-second step is enough for a smoke run
    min_repeats, budget_s = (1, 1.0) if ARGS.quick else (3, 10.0)
    batches = load_batches(ARGS.data, ARGS.batch, N_BATCHES)
    v = harness.versions("pennylane", "pennylane_lightning")
    print(f"torch {v['torch']}, pennylane {v['pennylane']}, lightning {v['pennylane_lightning']}, "
          f"qfleet {v['qfleet']}; threads {ARGS.threads} (OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}); "
          f"batch {ARGS.batch}; {platform.machine()}, {os.cpu_count()} CPUs")

    torch.manual_seed(ARGS.seed)
    classical_template = HybridClassifier(torch.nn.Identity())
    qfleet_layer = qfleet_circuit_layer(ARGS.threads)
    layers = {QFLEET: qfleet_layer}
    for name, device_name, diff_method, _ in PENNYLANE_VARIANTS:
        layers[name] = pennylane_torch_layer(device_name, diff_method, qfleet_layer.weight)
    middles = {name: Float64Layer(layer) for name, layer in layers.items()}
    middles[FLOOR] = torch.nn.Sequential(torch.nn.Linear(N_QUBITS, N_QUBITS), torch.nn.Tanh())
    models = {name: build_model(middle, classical_template) for name, middle in middles.items()}

    # agreement before timing: the layers alone in float64 on the model's own angles, then whole steps
    images, labels = batches[0]
    with torch.no_grad():
        angles = models[QFLEET].angles(images[:LAYER_CHECK_ROWS]).double()
    cotangent = torch.randn(angles.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    mapping_diff, wrong_mapping_diff = verify_weight_mapping(qfleet_layer, angles, cotangent)
    layer_diffs = verify_layers(layers, angles, cotangent)
    model_diffs = verify_models(models, images, labels)
    print(f"weight mapping: qfleet weight[(l*{N_QUBITS} + q)*3 + k] = PennyLane weights[l, q, k] "
          f"(relative difference {mapping_diff:.1e}; other axis orders differ by >= {wrong_mapping_diff:.2f})")
    for name in layer_diffs:
        print(f"agree with qfleet: {name:24s} layer (float64) {layer_diffs[name]:.1e}, "
              f"model step (float32) {model_diffs[name]:.1e}  (relative)")

    results = {}
    for name, model in models.items():
        print(f"timing {name} ...", flush=True)
        results[name] = time_variant(model, batches, min_repeats, budget_s)

    base = results[QFLEET][0]["median_ms"]
    rows = []
    for name, (step, layer) in results.items():
        share = 100.0 * layer["median_ms"] / step["median_ms"]
        ratio = step["median_ms"] / base
        rows.append({"variant": name, "step_ms": step, "quantum_layer_ms": layer, "share_percent": share,
                     "step_ratio_to_qfleet": ratio, "target": target_note(name, ratio, share)})

    print(f"\nhybrid classifier training step, batch {ARGS.batch}, {ARGS.threads} threads "
          f"(median over repeats; min-max in brackets):")
    print(f"{'variant':23s} {'step ms':>9s} {'(min-max)':>19s} {'quantum ms':>10s} {'(min-max)':>19s} "
          f"{'share %':>7s} {'step/qfleet':>11s}  target")
    for r in rows:
        s, q = r["step_ms"], r["quantum_layer_ms"]
        print(f"{r['variant']:23s} {s['median_ms']:9.2f} {spread(s, 2):>19s} {q['median_ms']:10.3f} "
              f"{spread(q, 3):>19s} {r['share_percent']:7.1f} {r['step_ratio_to_qfleet']:10.1f}x  {r['target']}")
    print("repeats (step/layer): " + ", ".join(
        f"{r['variant']} {r['step_ms']['repeats']}/{r['quantum_layer_ms']['repeats']}" for r in rows))
    print("(a benchmark: the targets are reported, not asserted)")

    # the script's own document, as before, plus the harness's table (written by finish)
    doc = {"benchmark": "bench/compare/classify.py", "machine": harness.run_machine(ARGS.threads), "versions": v,
           "batch": ARGS.batch, "quick": ARGS.quick, "min_repeats": min_repeats, "budget_s_per_figure": budget_s,
           "data": str(ARGS.data), "agreement": {"weight_mapping": mapping_diff,
                                                  "other_axis_orders_min": wrong_mapping_diff,
                                                  "layer_float64": layer_diffs, "model_step_float32": model_diffs},
           "targets": {"step_ratio_min": STEP_RATIO_TARGETS,
                       "qfleet_quantum_share_max_percent": QFLEET_SHARE_TARGET_PERCENT},
           "variants": rows}
    harness.finish(ARGS, "classify.py", table_rows(rows, model_diffs, layer_diffs), doc,
                   title="ratio variant / qfleet (> 1: qfleet faster)")


def table_rows(rows, model_diffs, layer_diffs):
    """The step and the quantum layer of each variant beside qfleet's (ratio variant / qfleet), with
    the checks' relative differences (model step in float32, layer alone in float64)."""
    def t(f):
        return harness.Timing(f["median_ms"] / 1e3, f["min_ms"] / 1e3, f["max_ms"] / 1e3, f["repeats"],
                              f["calls_per_repeat"], float("nan"))

    q = next(r for r in rows if r["variant"] == QFLEET)
    out = []
    for key, what, diffs in (("step_ms", "training step", model_diffs),
                             ("quantum_layer_ms", "quantum layer fwd+bwd", layer_diffs)):
        out += [harness.row(f"{what}, batch {ARGS.batch}", r["variant"], t(r[key]), t(q[key]),
                            error=diffs.get(r["variant"]), note=r["target"] if key == "step_ms" else "")
                for r in rows]
    return out


if __name__ == "__main__":
    main()
