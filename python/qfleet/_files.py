"""How qfleet's Python side writes a file (figures, images, noise models): as the C++ writer
qfleet::write_file_atomic does (docs/reliability.md, "Writes cannot be redirected").

The content goes to a fresh temporary in the target's folder (tempfile.mkstemp: O_EXCL, never an
existing file or a planted symbolic link), named ".<name>.qfleet-XXXXXXXX" so that an app starting
on the folder recognises one a killed writer left; it is flushed to the disk, then renamed over
the target with os.replace, which replaces a symbolic link planted at the target instead of
writing through it. A reader sees the old file or the whole new one; on any failure the
temporary is removed and the old file is left."""
import os
import tempfile


def write_atomic(path, write):
    """Writes `path` through `write(f)`, f a binary file object open on the temporary."""
    path = os.fspath(path)
    folder, name = os.path.split(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.qfleet-", dir=folder or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o644)  # mkstemp makes it 0600; a figure is read like any other file
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_bytes(path, data: bytes):
    write_atomic(path, lambda f: f.write(data))


def write_text(path, text: str):
    write_bytes(path, text.encode("utf-8"))


def save_figure(fig, path, **kwargs):
    """fig.savefig(path, **kwargs) through write_atomic; the format follows the name's extension."""
    ext = os.path.splitext(os.fspath(path))[1].lstrip(".").lower() or "png"
    kwargs.setdefault("format", ext)
    write_atomic(path, lambda f: fig.savefig(f, **kwargs))
