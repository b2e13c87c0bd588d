"""The small exact statistics against published values, and the path alignment."""

from __future__ import annotations

import math

import pytest

from adk_otel.traces.comparisons.paths import first_divergence, lcs_alignment
from adk_otel.traces.comparisons.stats import (
    Distribution,
    chi_square_counts,
    chi_square_sf,
    fisher_exact,
    holm,
    mann_whitney,
    normal_quantile,
    quantize,
    rate_difference_interval,
    ratio_interval,
)


def test_fisher_exact_matches_published_values() -> None:
    # Fisher's lady tasting tea: 3 of 4 against 1 of 4, p = 0.4857 (two-sided).
    assert fisher_exact(3, 4, 1, 4) == pytest.approx(0.485714, abs=1e-6)
    # [[8, 2], [1, 5]]: p = 0.034965 (R's fisher.test).
    assert fisher_exact(8, 10, 1, 6) == pytest.approx(0.034965, abs=1e-6)
    assert fisher_exact(0, 40, 0, 40) == 1.0
    assert fisher_exact(2, 40, 14, 40) < 0.01


def test_newcombe_interval_matches_the_paper() -> None:
    # Newcombe (1998), example (a): 56/70 - 48/80 = 0.2, interval 0.0524 to 0.3339.
    low, high = rate_difference_interval(48, 80, 56, 70, 0.05)
    assert (low, high) == pytest.approx((0.0524, 0.3339), abs=1e-4)


def test_mann_whitney_normal_approximation() -> None:
    # Two fully separated samples of 5: U = 0, two-sided p = 0.01219 (with the
    # continuity correction, as scipy's method="asymptotic").
    x, y = Distribution.of([1, 2, 3, 4, 5]), Distribution.of([6, 7, 8, 9, 10])
    assert mann_whitney(x, y) == pytest.approx(0.012186, abs=1e-5)
    assert mann_whitney(x, x) == 1.0
    assert mann_whitney(Distribution.of([3] * 5), Distribution.of([3] * 5)) == 1.0  # all ties


def test_chi_square_tail_and_the_two_by_two_case() -> None:
    for df, critical in ((1, 3.841459), (2, 5.991465), (5, 11.070498), (30, 43.772972)):
        assert chi_square_sf(critical, df) == pytest.approx(0.05, abs=1e-6)
    assert chi_square_sf(0.5, 3) == pytest.approx(0.918891, abs=1e-6)
    # A table that pools to 2 x 2 gets Fisher's exact test.
    assert chi_square_counts({"a": 8, "b": 2}, {"a": 1, "b": 5}, min_expected=0) == pytest.approx(
        fisher_exact(8, 10, 1, 6)
    )
    assert chi_square_counts({"a": 40}, {"a": 40}) == 1.0
    # Every cell small (8 runs a side, disjoint paths): the commonest path against
    # the rest, exactly, not everything pooled into one row (which could never fire).
    assert chi_square_counts({"a": 8}, {"b": 8}) == pytest.approx(fisher_exact(8, 8, 0, 8))
    assert chi_square_counts({"a": 8}, {"b": 8}) < 0.001


def test_normal_quantile_and_holm() -> None:
    assert normal_quantile(0.975) == pytest.approx(1.959964, abs=1e-6)
    assert normal_quantile(0.001) == pytest.approx(-3.090232, abs=1e-6)
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])


def test_distributions_are_bounded_and_quantiles_close() -> None:
    assert quantize(7) == 7.0 and quantize(0) == 0.0
    assert quantize(1234.5) == pytest.approx(1234.5, rel=0.005)
    values = [math.exp(i / 1000) for i in range(10_000)]  # 10,000 distinct values
    dist = Distribution.of(values)
    assert len(dist.counts) < 1100 and dist.n == 10_000
    assert dist.quantile(0.95) == pytest.approx(math.exp(9.5), rel=0.01)
    low, high = ratio_interval(dist, dist, 0.95, 0.05) or (0, 0)
    assert low is not None and high is not None and low < 1 < high


def test_the_first_divergence_of_aligned_paths() -> None:
    base = ("agent:root", "tool:search", "tool:lookup")
    assert first_divergence(base, base) is None
    inserted = first_divergence(base, ("agent:root", "tool:search", "tool:retry", "tool:lookup"))
    assert inserted is not None
    assert (inserted.step, inserted.after, inserted.baseline_step, inserted.candidate_step) == (
        3,
        "tool:search",
        None,
        "tool:retry",
    )
    swapped = first_divergence(base, ("agent:root", "tool:browse", "tool:lookup"))
    assert swapped is not None
    assert (swapped.step, swapped.baseline_step, swapped.candidate_step) == (
        2,
        "tool:search",
        "tool:browse",
    )
    # The alignment does not cascade: one inserted step, the rest still matched.
    ops, common = lcs_alignment(base, ("agent:root", "tool:x", "tool:search", "tool:lookup"))
    assert common == base and [op for op, _, _ in ops] == ["=", "+", "=", "="]
