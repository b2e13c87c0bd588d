"""The small exact statistics against published values, and the path alignment."""

from __future__ import annotations

import math

import pytest

from adk_otel.traces.comparisons.paths import first_divergence, lcs_alignment
from adk_otel.traces.comparisons.stats import (
    Distribution,
    chi_square_counts,
    chi_square_sf,
    exceedance_pmf,
    fisher_exact,
    fisher_one_sided,
    mean_test,
    normal_quantile,
    quantile_test,
    quantize,
    rate_difference_interval,
    student_t_quantile,
    student_t_sf,
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


def test_one_sided_fisher_is_the_upper_tail() -> None:
    # [[8, 2], [1, 5]] the other way round: P(X >= 8) = 0.024476 (R: alternative="greater").
    assert fisher_one_sided(1, 6, 8, 10) == pytest.approx(0.024476, abs=1e-6)
    # The improvement: 1 - P(X = 0) = 1 - C(10, 9) / C(16, 9).
    assert fisher_one_sided(8, 10, 1, 6) == pytest.approx(1 - 10 / 11440, abs=1e-12)
    assert fisher_one_sided(0, 40, 0, 40) == 1.0


def test_student_t_against_published_tables() -> None:
    for df, critical in ((1, 6.313752), (5, 2.015048), (40, 1.683851), (1000, 1.646379)):
        assert student_t_sf(critical, df) == pytest.approx(0.05, abs=1e-6)
        assert student_t_quantile(0.95, df) == pytest.approx(critical, abs=1e-5)
    assert student_t_sf(-2.015048, 5) == pytest.approx(0.95, abs=1e-6)


def test_exceedances_have_their_exact_law() -> None:
    # 5 candidate values against the 3rd of 7 baseline values: the law sums to 1
    # and its mean is n_c (n_b - r + 1) / (n_b + 1) = 5 * 5 / 8.
    pmf = exceedance_pmf(7, 3, 5)
    assert sum(pmf) == pytest.approx(1.0)
    assert sum(k * p for k, p in enumerate(pmf)) == pytest.approx(3.125)
    # All 40 runs above the baseline's median: far below any alpha.
    assert exceedance_pmf(40, 20, 40)[-1] < 1e-6


def test_quantile_test_interval_is_the_test_inverted() -> None:
    base = Distribution.of(range(100, 140))
    cand = Distribution.of([v * 2 for v in range(100, 140)])
    result = quantile_test(base, cand, 0.5, margin=1.2, alpha=0.05)
    assert result.p_value < 1e-6 and result.low > 1.2
    assert result.high is not None and result.low <= 2 * 119 / 119 <= result.high
    # The lower end is where the verdict flips, whatever the margin.
    for margin in (result.low * 0.999, result.low * 1.001):
        p = quantile_test(base, cand, 0.5, margin=margin, alpha=0.05).p_value
        assert (p < 0.05) == (margin < result.low)
    assert quantile_test(cand, base, 0.5, margin=1.0, alpha=0.05).p_value == pytest.approx(1.0)


def test_mean_test_interval_is_the_test_inverted() -> None:
    base = Distribution.of([100, 120, 90, 110, 130, 95, 105, 115])
    cand = Distribution.of([150, 170, 140, 160, 190, 145, 155, 165])
    result = mean_test(base, cand, margin=1.0, alpha=0.05)
    assert result.p_value < 1e-4 and result.high is not None
    assert result.low < (cand.mean() or 0) / (base.mean() or 1) < result.high
    for margin in (result.low * 0.999, result.low * 1.001):
        p = mean_test(base, cand, margin=margin, alpha=0.05).p_value
        assert (p < 0.05) == (margin < result.low)
    # Identical runs on each side: the ratio is known exactly.
    exact = mean_test(Distribution.of([2] * 5), Distribution.of([3] * 5), margin=1.1, alpha=0.05)
    assert (exact.p_value, exact.low, exact.high) == (0.0, 1.5, 1.5)


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


def test_normal_quantile() -> None:
    assert normal_quantile(0.975) == pytest.approx(1.959964, abs=1e-6)
    assert normal_quantile(0.001) == pytest.approx(-3.090232, abs=1e-6)


def test_distributions_are_bounded_and_quantiles_close() -> None:
    assert quantize(7) == 7.0 and quantize(0) == 0.0
    assert quantize(1234.5) == pytest.approx(1234.5, rel=0.005)
    values = [math.exp(i / 1000) for i in range(10_000)]  # 10,000 distinct values
    dist = Distribution.of(values)
    assert len(dist.counts) < 1100 and dist.n == 10_000
    assert dist.quantile(0.95) == pytest.approx(math.exp(9.5), rel=0.01)
    same = quantile_test(dist, dist, 0.95, margin=1.0, alpha=0.05)
    assert same.high is not None and same.low < 1 < same.high


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
