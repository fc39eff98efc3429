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
