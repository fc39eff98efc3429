"""scikit-learn's bundled 8x8 handwritten digits (1,797 images, UCI's optdigits test set)
written as MNIST-style IDX files, the tiny real data set of the tests:

    python -m qfleet.classify.digits OUT_DIR [--test-fraction 0.25] [--seed 0]

Pixels 0..16 are scaled to 0..255; the split is a seeded shuffle. The IDX files are
written here in plain Python (struct + gzip), independently of the C++ reader."""
import argparse
import gzip
import os
import struct
import sys

import numpy as np

from .._files import write_bytes


def write_idx(path, array):
    array = np.ascontiguousarray(array, dtype=np.uint8)
    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim) + b"".join(struct.pack(">I", n) for n in array.shape)
    data = header + array.tobytes()
    write_bytes(path, gzip.compress(data) if path.endswith(".gz") else data)


def convert(out_dir, test_fraction=0.25, seed=0):
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise SystemExit("qfleet.classify.digits: scikit-learn is not installed (pip install scikit-learn)")
    d = load_digits()
    images = np.rint(d.images * (255.0 / 16.0)).astype(np.uint8)
    order = np.random.default_rng(seed).permutation(len(images))
    n_test = int(round(len(images) * test_fraction))
    test, train = order[:n_test], order[n_test:]
    os.makedirs(out_dir, exist_ok=True)
    for name, idx in (("train", train), ("t10k", test)):
        write_idx(os.path.join(out_dir, f"{name}-images-idx3-ubyte.gz"), images[idx])
        write_idx(os.path.join(out_dir, f"{name}-labels-idx1-ubyte.gz"), d.target[idx])
    return len(train), len(test)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m qfleet.classify.digits", description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--test-fraction", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    n_train, n_test = convert(a.out_dir, a.test_fraction, a.seed)
    print(f"{a.out_dir}: {n_train} train, {n_test} test 8x8 digits")
    return 0


if __name__ == "__main__":
    sys.exit(main())
