"""``processing/estimates.py``: the job process keeps the estimate its job ran under (the
last one ``cost.check`` saw) and the CPU time it spent."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from stowage.processing import chain, cost, estimates
from stowage.processing.base import BigJob
from stowage.processing.vips import VipsEngine
from tests.processing.test_cost_saves import noise
from tests.processing.test_svgcost import LIMITS, PNG


def test_a_job_keeps_the_estimate_it_was_checked_at_and_its_cpu(tmp_path: Path) -> None:
    source, out = noise(tmp_path / "n.png", 800, 800, 5547), tmp_path / "out.png"
    parsed = chain.parse(["blur=amount:10", "sharpen=amount:5"])
    with pytest.raises(BigJob) as big:
        VipsEngine().render(source, parsed, PNG, out, dataclasses.replace(LIMITS, big_cost=0))
    with estimates.measured() as spent:
        VipsEngine(threads_per_job=1).render(source, parsed, PNG, out, LIMITS)
    assert spent[0].estimated == pytest.approx(float(big.value.args[0]))
    assert spent[0].cpu > 0.01  # the blur of 0.64 MP, measured over the block


def test_the_last_check_is_the_one_kept_and_none_without_one() -> None:
    with estimates.measured() as spent:
        for seconds in (0.5, 0.2, 0.3):
            cost.check(seconds, LIMITS)
    assert spent[0].estimated == 0.3
    with estimates.measured() as spent:
        pass
    assert spent[0].estimated is None and spent[0].fit() is None
    cost.check(0.4, LIMITS)  # outside a measured job: nothing kept, nothing raised


def test_a_fit_is_for_estimates_worth_comparing() -> None:
    assert estimates.Spent(0.05, 1.0).fit() is None
    assert estimates.Spent(0.5, 1.0).fit() == 2.0
    assert estimates.Spent(estimates.LEAST_OBSERVED, 0.05).fit() == pytest.approx(0.5)
