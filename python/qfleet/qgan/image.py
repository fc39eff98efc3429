"""One of scikit-learn's two bundled photographs as a small grey PGM, the real image a qGAN learns:

    python -m qfleet.qgan.image OUT.pgm [--name china.jpg|flower.jpg] [--size 64]

The photograph (sklearn.datasets.load_sample_image: shipped with scikit-learn, nothing is
downloaded) is turned grey with the ITU-R BT.601 luma 0.299 R + 0.587 G + 0.114 B, cropped to
its centre square, averaged down by area to size x size (size a power of two, 2..64: a
distribution over 2 log2(size) qubits) and rounded to 8 bits. The file is a binary PGM (P5,
maxval 255), rows from the top, written here in plain Python.
Needs scikit-learn (pip install scikit-learn).
"""
import argparse
import sys

import numpy as np

from .._files import write_bytes

PROG = "qfleet.qgan.image"
NAMES = ("china.jpg", "flower.jpg")
LUMA = np.array([0.299, 0.587, 0.114])  # ITU-R BT.601


def check_size(size):
    """size itself, or ValueError unless it is a power of two from 2 to 64."""
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or not 2 <= size <= 64 \
            or size & (size - 1):
        raise ValueError(f"size must be a power of two from 2 to 64 (2, 4, 8, 16, 32 or 64), not {size!r}")
    return int(size)


def _box_weights(n_in, n_out):
    """[n_out, n_in] area-averaging weights: the share of each output bin that each input pixel covers.

    Output bin i spans [i, i + 1) * n_in / n_out input pixels, so when n_in is not a multiple of
    n_out (427 -> 64) the pixels on a border count in both bins with the part of them that lies
    in each; every row sums to 1, and the mean of the image is kept."""
    scale = n_in / n_out
    edges = np.arange(n_out + 1) * scale
    lo, hi = edges[:-1, None], edges[1:, None]
    pixel = np.arange(n_in)[None, :]
    overlap = np.clip(np.minimum(hi, pixel + 1) - np.maximum(lo, pixel), 0.0, None)
    return overlap / scale


def luma(rgb):
    """The BT.601 luma of an [h, w, 3] RGB image, as floats in 0..255."""
    return np.asarray(rgb, dtype=np.float64) @ LUMA


def centre_square(image):
    """The largest centred square of an [h, w, ...] image (the odd pixel, if any, dropped at the end)."""
    h, w = image.shape[:2]
    side = min(h, w)
    top, left = (h - side) // 2, (w - side) // 2
    return image[top:top + side, left:left + side]


def sample_image(name="china.jpg", size=64):
    """scikit-learn's bundled photograph `name` as a grey [size, size] numpy uint8 array (rows from the top)."""
    size = check_size(size)
    if name not in NAMES:
        raise ValueError(f"unknown sample image {name!r} (scikit-learn ships {' and '.join(NAMES)})")
    from sklearn.datasets import load_sample_image  # imported here: the rest of the module needs only numpy

    grey = centre_square(luma(load_sample_image(name)))
    weights = _box_weights(grey.shape[0], size)
    small = weights @ grey @ weights.T
    return np.clip(np.rint(small), 0, 255).astype(np.uint8)


def write_pgm(path, array):
    """Writes a 2-D array of 0..255 values as a binary PGM (P5, maxval 255), rows in order."""
    a = np.asarray(array)
    if a.ndim != 2 or a.size == 0:
        raise ValueError(f"a PGM image is a non-empty 2-D array, not one of shape {a.shape}")
    if a.dtype != np.uint8:
        if not np.issubdtype(a.dtype, np.integer) or a.min() < 0 or a.max() > 255:
            raise ValueError(f"PGM pixels are integers from 0 to 255 (got {a.dtype}, "
                             f"{a.min()}..{a.max()})")
        a = a.astype(np.uint8)
    rows, cols = a.shape
    # (the header gives the width first)
    write_bytes(path, b"P5\n%d %d\n255\n" % (cols, rows) + np.ascontiguousarray(a).tobytes())


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, as the other qfleet commands answer
        print(f"{PROG}: error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def main(argv=None) -> int:
    ap = _Parser(prog=f"python -m {PROG}", description=__doc__.strip().splitlines()[0])
    ap.add_argument("out", metavar="OUT.pgm", help="the PGM file to write")
    ap.add_argument("--name", default="china.jpg", choices=NAMES, help="which photograph (default china.jpg)")
    ap.add_argument("--size", default=64, type=int, help="side in pixels: 2, 4, 8, 16, 32 or 64 (default 64)")
    a = ap.parse_args(argv)
    try:
        check_size(a.size)
        import sklearn.datasets  # noqa: F401  (missing scikit-learn is one line, not a traceback)
    except ValueError as e:
        print(f"{PROG}: error: --size: {e}", file=sys.stderr)
        return 2
    except ImportError:
        print(f"{PROG}: error: scikit-learn is not installed; install it with: pip install scikit-learn",
              file=sys.stderr)
        return 2
    image = sample_image(a.name, a.size)
    try:
        write_pgm(a.out, image)
    except OSError as e:
        print(f"{PROG}: error: cannot write {a.out}: {e.strerror}", file=sys.stderr)
        return 2
    print(f"{a.out}: {a.name} as {a.size}x{a.size} grey pixels (mean {image.mean():.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
