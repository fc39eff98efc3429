#!/usr/bin/env python3
"""The first records of an MNIST-style IDX data set, as a data set of its own.

    scripts/idx_subset.py SRC DST TRAIN TEST

SRC is a folder of {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] (Debian's fashion-mnist
package: /usr/share/datasets/fashion-mnist); DST gets the same four files, gzipped, holding
the first TRAIN training and TEST test records (their headers' counts rewritten). For a
machine the whole data set cannot travel to: scripts/gpu_prepare.sh carries 1280 + 256
records of Fashion-MNIST (0.7 MiB) for the classifier's step breakdown on a GPU, where the
step's time does not depend on which images it sees. The IDX format: a big-endian magic
(0x0000080d: unsigned bytes, d dimensions), d big-endian int32 sizes, the data
(http://yann.lecun.com/exdb/mnist/, "THE IDX FILE FORMAT").
"""
import argparse
import gzip
import os
import struct
import sys


def read(path):
    """The bytes of an IDX file, or of its .gz beside it."""
    for name in (path, path + ".gz"):
        if os.path.exists(name):
            opener = gzip.open if name.endswith(".gz") else open
            with opener(name, "rb") as f:
                return f.read()
    raise FileNotFoundError(f"idx_subset: no {path}[.gz]")


def head(data, count, path):
    """The first `count` records of an IDX file's bytes, its header's count rewritten."""
    if len(data) < 4 or data[0:2] != b"\0\0" or data[2] != 0x08:
        raise ValueError(f"idx_subset: {path} is not an IDX file of unsigned bytes")
    dims = data[3]
    if dims < 1 or len(data) < 4 + 4 * dims:
        raise ValueError(f"idx_subset: {path}: a header of {dims} dimensions does not fit in {len(data)} bytes")
    sizes = list(struct.unpack(f">{dims}i", data[4:4 + 4 * dims]))
    record = 1
    for s in sizes[1:]:
        record *= s
    if count > sizes[0]:
        raise ValueError(f"idx_subset: {path} holds {sizes[0]} records, {count} asked for")
    body = data[4 + 4 * dims:4 + 4 * dims + count * record]
    if len(body) != count * record:
        raise ValueError(f"idx_subset: {path} ends before its {count}th record")
    return data[:4] + struct.pack(f">{dims}i", count, *sizes[1:]) + body


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("train", type=int)
    ap.add_argument("test", type=int)
    args = ap.parse_args(argv)
    if args.train < 1 or args.test < 1:
        ap.error("TRAIN and TEST must be positive")
    os.makedirs(args.dst, exist_ok=True)
    for split, count in (("train", args.train), ("t10k", args.test)):
        for kind in ("images-idx3", "labels-idx1"):
            name = f"{split}-{kind}-ubyte"
            try:
                sub = head(read(os.path.join(args.src, name)), count, name)
            except (OSError, ValueError) as e:
                sys.exit(str(e))
            # mtime 0: the same records give the same bytes
            with gzip.GzipFile(os.path.join(args.dst, name + ".gz"), "wb", mtime=0) as f:
                f.write(sub)
    return 0


if __name__ == "__main__":
    sys.exit(main())
