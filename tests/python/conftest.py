import os

import pytest
import torch

torch.set_default_dtype(torch.float64)


@pytest.fixture(scope="session")
def qfleet():
    import qfleet as q
    return q


@pytest.fixture(scope="session")
def mc(qfleet):
    """The meta-control app's module (its operators from libqfleet_meta.so)."""
    from qfleet import meta_control
    return meta_control


@pytest.fixture
def meta_binary():
    """The qfleet-meta binary of the build under test (ctest and scripts/test.sh set QFLEET_META)."""
    path = os.environ.get("QFLEET_META")
    if not path:
        pytest.skip("QFLEET_META (the qfleet-meta binary) is not set: ctest and scripts/test.sh set it")
    return path


def pytest_report_header(config):
    return f"torch {torch.__version__}; qfleet operators from {os.environ.get('QFLEET_TORCH_LIBRARY', 'the installed package')}"
