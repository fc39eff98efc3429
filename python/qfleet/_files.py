"""How qfleet's Python side writes a file (figures, images, noise models): as the C++ writer
qfleet::write_file_atomic does (docs/reliability.md, "Writes cannot be redirected").

The content goes to a fresh temporary in the target's folder (tempfile.mkstemp: O_EXCL, never an
existing file or a planted symbolic link), named ".<name>.qfleet-XXXXXXXX" so that an app starting
on the folder recognises one a killed writer left; it is flushed to the disk, then renamed over
the target with os.replace, which replaces a symbolic link planted at the target instead of
writing through it. A reader sees the old file or the whole new one; on any failure the
temporary is removed and the old file is left."""
import os
import stat
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


MAX_TEXT_BYTES = 64 << 20  # as the C++ reader's kMaxTextFileBytes (qfleet/files.hpp)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def read_bytes(path, max_bytes: int = MAX_TEXT_BYTES) -> bytes:
    """The whole of a file, as the C++ reader read_file_bounded reads it (the same messages): a regular
    file or a pipe (read to its end) of at most `max_bytes`; a device (/dev/zero) or a folder is refused
    without reading. Raises OSError for what cannot be opened, ValueError otherwise."""
    path = os.fspath(path)
    mode = os.stat(path).st_mode  # before opening: opening some devices has effects
    if stat.S_ISDIR(mode):
        raise ValueError(f"cannot read {path}: it is a directory")
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        raise ValueError(f"cannot read {path}: it is {_kind(mode)}, not a regular file")
    with open(path, "rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        size = f"{max_bytes >> 20} MiB" if max_bytes % (1 << 20) == 0 else f"{max_bytes} bytes"
        raise ValueError(f"cannot read {path}: it holds more than {size}, the most qfleet reads from such a file")
    return data


def read_text(path, max_bytes: int = MAX_TEXT_BYTES) -> str:
    """read_bytes, decoded as UTF-8 (problems, configurations)."""
    return read_bytes(path, max_bytes).decode("utf-8")
