"""The device classifier's training loop (`qfleet-qgan classify`, C++ on LibTorch and
qfleet::train) beside the same network on the same records trained in plain PyTorch, in one run.

    PYTHONPATH=python \\
        python bench/compare/qgan_classifier.py [--shots 64] [--epochs 5] [--device cpu|cuda|auto] \\
        [--threads 2] [--seed 1] [--json out.json] [--md out.md] [--quick]

(or with the pip-installed package). Steps:
1. runs `python -m qfleet.qgan classify --shots S --epochs E --set save_records=true` in a child
   process (the app's records, network and timing: docs/qgan.md);
2. reads the records and the initial network it wrote (shots_S/records.pt, with
   qfleet.read_tensor_file: load_records below), builds the same nn.Sequential (Linear + ReLU layers, one
   logit per device) with those weights, and checks its logits on the app's fixed batch (the
   first 64 test records) equal the app's (to 1e-5 of their largest value; exit status 1 if not);
3. trains it the way the suite qfleet replaces trained its networks: a DataLoader over a
   TensorDataset (batch 128 by default, shuffled, pinned memory and non-blocking copies on a
   GPU), autocast to bfloat16 on a GPU (FP32 on the CPU), cudnn.benchmark and TF32 on, Adam,
   and a running loss read with loss.item() every step; evaluated on the test records after
   every epoch as the app does.
On the CPU both networks run on one thread (the app's rule; --threads is the app's record drawing).
Printed: milliseconds per training epoch (evaluation excluded) of both, their ratio, each
one's final test accuracy beside the Bayes limit, and the share of the app's time spent drawing
the records on the engine. The two loops draw their batches differently, so their accuracies
agree statistically, not bit for bit. --quick: 8 shots, 1 epoch (a smoke run); the other shared
flags: harness.py.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import harness


def run_app(args, out):
    cmd = [sys.executable, "-m", "qfleet.qgan", "classify", "--shots", str(args.shots), "--epochs", str(args.epochs),
           "--device", args.device, "--threads", str(args.threads), "--seed", str(args.seed), "--batch", str(args.batch),
           "--set", "save_records=true", "--out", out, "--quiet"]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"qgan_classifier: {' '.join(cmd)} failed ({done.returncode}):\n{done.stderr.strip()}")
    with open(os.path.join(out, "classifier.json"), encoding="utf-8") as f:
        return json.load(f)


def load_records(torch, path):
    """The app's records.pt, a qfleet tensor file (data only: nothing in it can run code), as a dict:
    shots, the records' counts and labels, the class distributions, the check logits and the initial
    network's parameters (initial_state, keyed as a state_dict)."""
    from qfleet.tensor_file import read_tensor_file

    f = read_tensor_file(path, "qfleet-qgan-records/1")
    data = {k: v for k, v in f.tensors.items() if not k.startswith("initial_state.")}
    data["initial_state"] = {k[len("initial_state."):]: v for k, v in f.tensors.items() if k.startswith("initial_state.")}
    data["shots"] = int(f.texts["shots"])
    return data


def plain_network(torch, state):
    layers, i = [], 0
    while f"{i}.weight" in state:
        w = state[f"{i}.weight"]
        layers.append(torch.nn.Linear(w.shape[1], w.shape[0]))
        if f"{i + 2}.weight" in state:
            layers.append(torch.nn.ReLU())
        i += 2
    net = torch.nn.Sequential(*layers)
    net.load_state_dict(state)
    return net


def train_plain(torch, net, data, args, device):
    cuda = device.type == "cuda"
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    shots = float(data["shots"])
    x = data["train_counts"].float() / shots
    y = data["train_labels"]
    test_x = (data["test_counts"].float() / shots).to(device)
    test_y = data["test_labels"].to(device)
    gen = torch.Generator().manual_seed(args.seed)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=args.batch, shuffle=True,
                                         pin_memory=cuda, generator=gen)
    net = net.to(device)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    epoch_ms, accuracy = [], None
    for _ in range(args.epochs):
        net.train()
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        running = 0.0
        for xb, yb in loader:
            xb, yb = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=cuda):
                loss = torch.nn.functional.cross_entropy(net(xb).float(), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            running += loss.item()
        if cuda:
            torch.cuda.synchronize()
        epoch_ms.append(1e3 * (time.perf_counter() - t0))
        net.eval()
        with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=cuda):
            accuracy = (net(test_x).float().argmax(1) == test_y).float().mean().item()
    return epoch_ms, accuracy


def parse_args(argv=None):
    ap = harness.parser(__doc__.split("\n")[0], threads=2, seed=1, quick_help="8 shots, 1 epoch: a smoke run")
    ap.add_argument("--shots", type=int, default=None, help="shots per record (default 64; --quick: 8)")
    ap.add_argument("--epochs", type=int, default=None, help="training epochs (default 5; --quick: 1)")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda", "automatic"])
    args = harness.validate(ap, ap.parse_args(argv))
    args.shots = args.shots or (8 if args.quick else 64)
    args.epochs = args.epochs or (1 if args.quick else 5)
    return args


def main(argv=None):
    args = parse_args(argv)
    harness.threads_env(args.threads)
    import torch

    device = torch.device("cuda" if args.device == "cuda" or args.device == "automatic" and torch.cuda.is_available() else "cpu")
    torch.set_num_threads(1 if device.type == "cpu" else args.threads)  # the app's rule: a small network on one CPU thread
    with tempfile.TemporaryDirectory(prefix="qfleet-classifier-compare-") as out:
        report = run_app(args, out)
        data = load_records(torch, os.path.join(out, f"shots_{args.shots}", "records.pt"))
    net = plain_network(torch, data["initial_state"])
    with torch.no_grad():
        check = net(data["test_counts"][:64].float() / float(data["shots"]))
    # to 1e-5 of the largest logit (or absolute below 1); the JSON keeps the absolute difference. On a
    # GPU the app's convolutions run in TF32 (cuDNN's default in LibTorch: 10-bit mantissa, unit
    # roundoff 2^-11 = 4.9e-4), so there 1e-3: an H200 gave 3.2e-5 against this FP32 CPU forward.
    rtol = 1e-3 if device.type == "cuda" else 1e-5
    harness.check_close("plain PyTorch network's logits against the app's", check, data["check_logits"], rtol=rtol,
                        floor=1.0)
    diff = harness.max_error(check, data["check_logits"])[0]
    epoch_ms, accuracy = train_plain(torch, net, data, args, device)
    r = report["results"][0]
    app_ms = r["timing"]["train_ms_per_epoch"]
    plain_ms = statistics.median(epoch_ms)
    rows = {
        "shots": args.shots, "epochs": args.epochs, "batch": args.batch, "device": str(device), "threads": args.threads,
        "check": {"max_abs_logit_difference": diff},
        "qfleet_ms_per_epoch": app_ms, "plain_pytorch_ms_per_epoch_median": plain_ms,
        "plain_pytorch_ms_per_epoch": epoch_ms, "speedup": plain_ms / app_ms,
        "qfleet_accuracy": r["accuracy"], "plain_pytorch_accuracy": accuracy, "accuracy_error": r["accuracy_error"],
        "bayes": r["bayes"], "qfleet_records_seconds": r["timing"]["records_seconds"],
        "qfleet_records_share": r["timing"]["records_share"],
    }
    print(f"{args.shots} shots per record, {args.epochs} epochs, batch {args.batch}, on {device} "
          f"(logits checked equal: max difference {diff:.2g})")
    print(f"  {'':22s} {'ms per epoch':>14s} {'test accuracy':>14s}")
    print(f"  {'qfleet-qgan classify':22s} {app_ms:14.1f} {r['accuracy']:14.4f}")
    print(f"  {'plain PyTorch':22s} {plain_ms:14.1f} {accuracy:14.4f}")
    print(f"  plain / qfleet: {plain_ms / app_ms:.2f}x; Bayes limit {r['bayes']['accuracy']:.4f} ({r['bayes']['method']}); "
          f"drawing the records: {100 * r['timing']['records_share']:.1f}% of the app's time")
    # the app reports one figure per epoch (its median); the plain loop's spread is over its epochs
    app = harness.Timing(app_ms / 1e3, app_ms / 1e3, app_ms / 1e3, args.epochs, 1, float("nan"))
    plain = harness.Timing(plain_ms / 1e3, min(epoch_ms) / 1e3, max(epoch_ms) / 1e3, len(epoch_ms), 1, float("nan"))
    workload = f"classifier epoch, {args.shots} shots, batch {args.batch}, {device}"
    table = [harness.row(workload, "qfleet-qgan classify", app, app, note=f"accuracy {r['accuracy']:.4f}"),
             harness.row(workload, "plain PyTorch", plain, app, error=diff, note=f"accuracy {accuracy:.4f}")]
    harness.finish(args, "qgan_classifier.py", table, rows, title="ms per training epoch, ratio plain / qfleet")
    return 0


if __name__ == "__main__":
    sys.exit(main())
