import os

import pytest
import torch

torch.set_default_dtype(torch.float64)


@pytest.fixture(scope="session")
def qfleet():
    import qfleet as q
    return q


def pytest_report_header(config):
    return f"torch {torch.__version__}; qfleet operators from {os.environ.get('QFLEET_TORCH_LIBRARY', 'the installed package')}"
