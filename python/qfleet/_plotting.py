"""matplotlib for the apps' plot commands: the headless backend, or one clear line when
matplotlib is missing (each command then exits with status 2)."""
import sys


def pyplot(prog: str):
    """matplotlib.pyplot on the Agg backend, or None after printing `<prog>: error: ...`."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"{prog}: error: matplotlib is not installed; install it with: pip install matplotlib", file=sys.stderr)
        return None
    return plt
