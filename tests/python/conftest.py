import os
import zlib

import numpy as np
import pytest
import torch

torch.set_default_dtype(torch.float64)


@pytest.fixture(autouse=True)
def seeded_per_test(request):
    """Seeds torch's and numpy's global generators from the test's own id, so a test
    draws the same numbers whichever tests ran before it: on a machine with a GPU the
    CUDA-tensor tests draw too, and a test selected alone (-k) sees what the suite sees."""
    seed = zlib.crc32(request.node.nodeid.split("::", 1)[-1].encode())
    torch.manual_seed(seed)
    np.random.seed(seed)


@pytest.fixture(scope="session")
def qfleet():
    import qfleet as q
    return q


@pytest.fixture(scope="session")
def mc(qfleet):
    """The meta-control app's module (its operators from libqfleet_meta.so)."""
    from qfleet import meta_control
    return meta_control


def app_binary(variable, name):
    """An app's binary from the build under test (ctest and scripts/test.sh set the variable)."""
    path = os.environ.get(variable)
    if not path:
        pytest.skip(f"{variable} (the {name} binary) is not set: ctest and scripts/test.sh set it")
    return path


@pytest.fixture
def meta_binary():
    return app_binary("QFLEET_META", "qfleet-meta")


@pytest.fixture
def classify_binary():
    return app_binary("QFLEET_CLASSIFY", "qfleet-classify")


def pytest_report_header(config):
    return f"torch {torch.__version__}; qfleet operators from {os.environ.get('QFLEET_TORCH_LIBRARY', 'the installed package')}"


# On a GPU machine (scripts/gpu_check.sh sets QFLEET_EXPECT_GPU=1) a skipped test is one
# that did not run where it should have (a missing GPU copy, a missing package):
# it fails instead of passing silently.
def _expect_gpu():
    return os.environ.get("QFLEET_EXPECT_GPU") == "1"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if _expect_gpu() and rep.skipped and not hasattr(rep, "wasxfail"):
        rep.outcome = "failed"
        rep.longrepr = f"skipped where QFLEET_EXPECT_GPU=1 (a GPU machine): {rep.longrepr}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    rep = outcome.get_result()
    if _expect_gpu() and rep.skipped:
        rep.outcome = "failed"
        rep.longrepr = f"a whole file skipped where QFLEET_EXPECT_GPU=1 (a GPU machine): {rep.longrepr}"
