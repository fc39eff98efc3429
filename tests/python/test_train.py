"""qfleet.train from Python: the same C++ meter (torch.classes.qfleet_train), checked
against means computed here with numpy, and its errors as ValueError."""
import json

import numpy as np
import pytest
import torch

import qfleet.train


def test_the_meter_syncs_once_per_window_with_the_window_means(tmp_path):
    log = tmp_path / "log.jsonl"
    meter = qfleet.train.MetricMeter(sync_every=7, log_path=str(log))
    losses = np.random.default_rng(3).normal(size=30)
    synced = [meter.add(loss=torch.tensor(x), index=torch.tensor(float(i))) for i, x in enumerate(losses)]
    assert sum(synced) == meter.host_syncs == 4
    assert meter.flush() and meter.host_syncs == 5 and not meter.flush()
    rows = meter.rows
    assert [r["step"] for r in rows] == [7, 14, 21, 28, 30]
    for r in rows:
        window = losses[r["step"] - r["steps"]:r["step"]]
        assert r["loss"] == pytest.approx(window.mean(), rel=1e-14, abs=1e-15)
        assert r["index"] == pytest.approx(np.arange(r["step"] - r["steps"], r["step"]).mean(), rel=1e-15)
    lines = [json.loads(s) for s in log.read_text().splitlines()]
    assert [ln["loss"] for ln in lines] == [r["loss"] for r in rows]


def test_the_meter_refuses_what_is_not_one_number_per_metric():
    with pytest.raises(ValueError, match="sync_every"):
        qfleet.train.MetricMeter(sync_every=0)
    meter = qfleet.train.MetricMeter(sync_every=2)
    with pytest.raises(ValueError, match="taken by the row"):
        meter.add(step=torch.tensor(1.0))
    with pytest.raises(ValueError, match="one number per step"):
        meter.add(loss=torch.ones(3))
    meter.add(loss=torch.tensor(1.0))
    with pytest.raises(ValueError, match="the first step reported"):
        meter.add(accuracy=torch.tensor(1.0))
    assert meter.steps == 1
