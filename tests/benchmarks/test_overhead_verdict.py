"""``overhead.py``'s verdict on a target: met or missed only when the
one-sided bounds of the ratio say so, else unreadable.

The bounds are checked for calibration on seeded simulations of what a shared
machine does to the samples (a slowdown shared by a round, one of each
sample, and rare collection-sized spikes): each one-sided bound must miss the
true ratio at most about as often as its confidence allows.
"""

from __future__ import annotations

import random

import pytest

from .scripts import load

overhead = load("overhead")


def _rounds(
    seed: int,
    *,
    ours: float,
    theirs: float,
    rounds: int = 30,
    base: float = 3000.0,
    sigma: float = 0.2,
    shared: float = 0.5,
    spikes: float = 0.03,
) -> tuple[list[float], list[float], list[float]]:
    """CPU µs per sample of adk-otel, a yardstick and bare, round by round:
    ``shared`` of the slowdown (log scale) is the round's, the rest each sample's."""
    rng = random.Random(seed)
    samples: tuple[list[float], list[float], list[float]] = ([], [], [])
    for _ in range(rounds):
        slowdown = rng.lognormvariate(0, sigma * shared)  # the machine, for the whole round
        for column, extra in zip(samples, (ours, theirs, 0.0), strict=True):
            value = (base + extra) * slowdown * rng.lognormvariate(0, sigma * (1 - shared))
            if rng.random() < spikes:  # a collection or another process
                value += 10 * base * rng.random()
            column.append(value)
    return samples


def test_each_bound_misses_the_true_ratio_no_more_often_than_its_confidence_allows():
    truth, simulations = 500 / 300, 160
    above = below = 0
    for seed in range(simulations):
        ours, theirs, bare = _rounds(seed, ours=500, theirs=300)
        lower, upper = overhead.ratio_bounds(ours, theirs, bare, seed=seed, resamples=400)
        above += lower > truth
        below += upper < truth
    # 5 % each at 95 %; the allowance is about two binomial standard deviations.
    assert above / simulations <= 0.09
    assert below / simulations <= 0.09


@pytest.mark.parametrize(("ours", "expected"), [(360.0, "met"), (600.0, "missed")])
def test_a_quiet_run_decides(ours, expected):
    # Ratios 1.2 and 2.0 against a 1.5 target, on a quiet machine.
    samples = _rounds(7, ours=ours, theirs=300, sigma=0.01, spikes=0.0, rounds=40)
    bounds = overhead.ratio_bounds(*samples, resamples=500)
    assert overhead.verdict(1.5, bounds) == expected


def test_rounds_slowed_down_whole_do_not_blur_the_verdict():
    # The machine slows whole rounds down (as it does when another process
    # runs for a while): resampling rounds whole keeps each round's overheads
    # together, so the noise they share cancels.
    samples = _rounds(3, ours=360, theirs=300, sigma=0.6, shared=0.98, spikes=0.0, rounds=40)
    assert overhead.verdict(1.5, overhead.ratio_bounds(*samples, resamples=500)) == "met"


def test_a_ratio_at_the_target_is_seldom_decided():
    # A true ratio of 1.5 against a 1.5 target: either verdict would be a
    # guess; each bound is wrong in about 5 % of runs.
    decided = 0
    for seed in range(40):
        samples = _rounds(seed, ours=450, theirs=300, sigma=0.05, spikes=0.0, rounds=40)
        bounds = overhead.ratio_bounds(*samples, seed=seed, resamples=400)
        decided += overhead.verdict(1.5, bounds) != "unreadable"
    assert decided <= 6


def test_a_noisy_run_is_unreadable_where_its_median_ratio_would_pass():
    # A true ratio of 2 under the noise measured on the shared machine: the
    # medians alone can land under 1.5; the bounds do not claim the target met.
    claimed = 0
    for seed in range(40):
        ours, theirs, bare = _rounds(seed, ours=600, theirs=300, sigma=0.5, spikes=0.1)
        bounds = overhead.ratio_bounds(ours, theirs, bare, seed=seed, resamples=300)
        claimed += overhead.verdict(1.5, bounds) == "met"
    assert claimed <= 1


def test_a_yardstick_lost_in_the_noise_leaves_the_upper_bound_unbounded():
    bare = [1000.0, 1010.0, 990.0, 1005.0]
    theirs = [990.0, 1000.0, 985.0, 1000.0]  # no overhead left above bare
    ours = [1200.0, 1210.0, 1190.0, 1205.0]
    lower, upper = overhead.ratio_bounds(ours, theirs, bare, resamples=200)
    assert upper == float("inf")
    assert overhead.verdict(1.5, (lower, upper)) != "met"
