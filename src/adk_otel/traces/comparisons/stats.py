"""Small exact statistics for comparing two sets of runs, in pure Python.

Why not scipy: it would be the package's largest dependency by far, and the
slowest import, for a handful of functions (measured in docs/compare.md,
"Statistics, and why no scipy"). These are exact where it matters (Fisher's
test sums the hypergeometric distribution), checked against published values
in the tests, and fast on the distributions a comparison keeps.

Values are kept as a :class:`Distribution`: counts per value, with values
above 128 rounded to a 1 % logarithmic grid, so memory grows with the
number of distinct values (a few thousand at most), never with the runs.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

_GRID = math.log(1.01)
_EXACT_BELOW = 128


def quantize(value: float) -> float:
    """Whole numbers below 128 as they are; anything else to a 1 % log grid."""
    if value <= 0:
        return 0.0
    if value < _EXACT_BELOW and float(value).is_integer():
        return float(value)
    return round(math.exp(round(math.log(value) / _GRID) * _GRID), 6)


@dataclass
class Distribution:
    """A bounded histogram of values: ``counts[value] = how many``."""

    counts: Counter[float] = field(default_factory=Counter)

    def add(self, value: float, times: int = 1) -> None:
        self.counts[quantize(value)] += times

    def merge(self, other: Distribution) -> None:
        self.counts.update(other.counts)

    @property
    def n(self) -> int:
        return sum(self.counts.values())

    def mean(self) -> float | None:
        n = self.n
        return sum(v * c for v, c in self.counts.items()) / n if n else None

    def quantile(self, q: float) -> float | None:
        """The nearest-rank quantile (the value at rank ceil(q * n))."""
        return self.order_statistic(max(1, math.ceil(q * self.n)))

    def order_statistic(self, rank: int) -> float | None:
        """The ``rank``-th smallest value (1-based, clamped to the sample)."""
        n = self.n
        if not n:
            return None
        rank = min(max(rank, 1), n)
        seen = 0
        for value in sorted(self.counts):
            seen += self.counts[value]
            if seen >= rank:
                return value
        return None  # pragma: no cover (unreachable: ranks are clamped)

    def as_pairs(self) -> list[list[float]]:
        return [[value, count] for value, count in sorted(self.counts.items())]

    @classmethod
    def from_pairs(cls, pairs: Iterable[Sequence[float]]) -> Distribution:
        dist = cls()
        for value, count in pairs:
            number, times = float(value), int(count)
            if not (math.isfinite(number) and number >= 0 and times >= 1):
                raise ValueError(f"a histogram entry of {value!r} x {count!r}")
            dist.counts[number] += times
        return dist

    @classmethod
    def of(cls, values: Iterable[float]) -> Distribution:
        dist = cls()
        for value in values:
            dist.add(value)
        return dist


def significant(value: float) -> float:
    """``value`` to 6 significant digits: a score kept as it was, to the digit
    ADK reports, but no finer (so similar scores share an entry)."""
    return float(f"{value:.6g}")


@dataclass
class Scores(Distribution):
    """A histogram of evaluation scores: values of any sign, kept to 6
    significant digits (:func:`significant`), not on the log grid of costs."""

    def add(self, value: float, times: int = 1) -> None:
        self.counts[significant(value)] += times

    @classmethod
    def from_pairs(cls, pairs: Iterable[Sequence[float]]) -> Scores:
        dist = cls()
        for value, count in pairs:
            number, times = float(value), int(count)
            if not (math.isfinite(number) and times >= 1):
                raise ValueError(f"a score histogram entry of {value!r} x {count!r}")
            dist.counts[significant(number)] += times
        return dist


# -- rates ---------------------------------------------------------------------------


def _log_choose(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def fisher_exact(a: int, n1: int, c: int, n2: int) -> float:
    """Two-sided p-value of Fisher's exact test: ``a`` of ``n1`` against ``c``
    of ``n2`` (the tables as likely as the observed one or less, summed)."""
    total, hits = n1 + n2, a + c
    if n1 == 0 or n2 == 0 or hits in (0, total):
        return 1.0
    low, high = max(0, hits - n2), min(hits, n1)
    base = _log_choose(total, hits)

    def log_p(x: int) -> float:
        return _log_choose(n1, x) + _log_choose(n2, hits - x) - base

    observed = log_p(a)
    limit = observed + 1e-7
    p = sum(math.exp(lp) for x in range(low, high + 1) if (lp := log_p(x)) <= limit)
    return min(1.0, p)


def _wilson(k: int, n: int, z: float) -> tuple[float, float]:
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def rate_difference_interval(a: int, n1: int, c: int, n2: int, alpha: float) -> tuple[float, float]:
    """Newcombe's hybrid score interval for ``c/n2 - a/n1`` at ``1 - alpha``."""
    z = normal_quantile(1 - alpha / 2)
    p1, p2 = (a / n1 if n1 else 0.0), (c / n2 if n2 else 0.0)
    l1, u1 = _wilson(a, n1, z)
    l2, u2 = _wilson(c, n2, z)
    d = p2 - p1
    return (
        d - math.sqrt((p2 - l2) ** 2 + (u1 - p1) ** 2),
        d + math.sqrt((u2 - p2) ** 2 + (p1 - l1) ** 2),
    )


# -- distributions of categories -------------------------------------------------------


def chi_square_counts(
    base: Mapping[str, int], cand: Mapping[str, int], min_expected: float = 5.0
) -> float:
    """P-value of the chi-square test of homogeneity of two count tables.
    Categories expected fewer than ``min_expected`` times on either side are
    pooled, so small cells do not inflate the statistic; a 2 x 2 table left
    after pooling gets Fisher's exact test instead."""
    n1, n2 = sum(base.values()), sum(cand.values())
    if n1 == 0 or n2 == 0:
        return 1.0
    total = n1 + n2
    keys = sorted(set(base) | set(cand), key=lambda k: (-(base.get(k, 0) + cand.get(k, 0)), k))
    if len(keys) < 2:
        return 1.0
    rows = [(base.get(k, 0), cand.get(k, 0)) for k in keys]

    def small(row: tuple[int, int]) -> bool:
        return min(n1, n2) * (row[0] + row[1]) / total < min_expected

    kept = [row for row in rows if not small(row)]
    pooled = (sum(r[0] for r in rows if small(r)), sum(r[1] for r in rows if small(r)))
    if sum(pooled) and small(pooled) and len(kept) > 1:
        last = kept.pop()
        pooled = (pooled[0] + last[0], pooled[1] + last[1])
    if sum(pooled):
        kept.append(pooled)
    if len(kept) < 2:  # all small: the commonest category against the rest
        kept = [rows[0], (n1 - rows[0][0], n2 - rows[0][1])]
    rows = kept
    if len(rows) == 2:  # a 2 x 2 table: the exact test
        return fisher_exact(rows[0][0], n1, rows[0][1], n2)
    statistic = 0.0
    for a, c in rows:
        both = a + c
        for observed, side in ((a, n1), (c, n2)):
            expected = side * both / total
            statistic += (observed - expected) ** 2 / expected
    return chi_square_sf(statistic, len(rows) - 1)


def chi_square_sf(x: float, df: int) -> float:
    """Upper tail of the chi-square distribution: Q(df / 2, x / 2)."""
    if x <= 0:
        return 1.0
    return _gamma_q(df / 2, x / 2)


def _gamma_q(a: float, x: float) -> float:
    """The regularized upper incomplete gamma function (series or continued fraction)."""
    log_front = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1:
        term = total = 1 / a
        k = a
        for _ in range(1000):
            k += 1
            term *= x / k
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1 - total * math.exp(log_front))
    tiny = 1e-300
    b = x + 1 - a
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, 1000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        step = d * c
        h *= step
        if abs(step - 1) < 1e-15:
            break
    return min(1.0, math.exp(log_front) * h)


# -- helpers ----------------------------------------------------------------------------


def normal_quantile(p: float) -> float:
    """The standard normal's ``p`` quantile (Acklam's rational approximation,
    relative error below 1.2e-9)."""
    if not 0 < p < 1:
        raise ValueError(f"a probability strictly between 0 and 1; got {p}")
    a = (-39.69683028665376, 220.9460984245205, -275.9285104469687, 138.3577518672690,
         -30.66479806614716, 2.506628277459239)  # fmt: skip
    b = (-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972,
         -13.28068155288572)  # fmt: skip
    c = (-0.007784894002430293, -0.3223964580411365, -2.400758277161838, -2.549732539343734,
         4.374664141464968, 2.938163982698783)  # fmt: skip
    d = (0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416)
    if p < 0.02425:
        q = math.sqrt(-2 * math.log(p))
        return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / (
            (((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1
        )
    if p > 1 - 0.02425:
        return -normal_quantile(1 - p)
    q = p - 0.5
    r = q * q
    return (
        (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5])
        * q
        / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
    )


# -- one-sided tests of the statistic a gate reports ----------------------------------


@dataclass(frozen=True)
class OneSided:
    """A one-sided test that the candidate's statistic exceeds ``margin`` times
    the baseline's, and the interval for their ratio got by inverting that same
    test: ``low`` is the one-sided ``1 - alpha`` lower bound (above ``margin``
    exactly when ``p_value < alpha``), ``high`` the upper one (None: unbounded)."""

    p_value: float
    low: float
    high: float | None
    possible: bool = True
    """False when no data of these sizes could reach ``p_value < alpha``."""


def exceedance_pmf(n_base: int, rank: int, n_cand: int) -> list[float]:
    """``P(K = k)`` for ``k = 0 .. n_cand``: how many of ``n_cand`` candidate
    values exceed the ``rank``-th smallest of ``n_base`` baseline values when
    both samples come from one continuous distribution (distribution free)."""
    base = _log_choose(n_base + n_cand, n_cand)
    return [
        math.exp(
            _log_choose(rank - 1 + n_cand - k, n_cand - k)
            + _log_choose(n_base - rank + k, k)
            - base
        )
        for k in range(n_cand + 1)
    ]


def quantile_test(
    base: Distribution, cand: Distribution, q: float, *, margin: float, alpha: float
) -> OneSided:
    """Is the candidate's ``q`` quantile above ``margin`` times the baseline's?

    The exceedance test: ``K`` counts the candidate runs above ``margin`` times
    the baseline's ``q`` quantile (its order statistic of rank ``ceil(q n)``);
    under no change ``K`` has the exact law of :func:`exceedance_pmf`, so the
    p-value is ``P(K >= observed)``. The statistic tested is the quantile, not
    the ranks of every run: a faster bulk does not hide a slower tail, nor a
    slower tail a faster bulk. Inverting the test for every ratio gives the
    interval: the lower end is the ``k*``-th largest candidate value over the
    baseline quantile, ``k*`` the fewest exceedances that reject."""
    n_b, n_c = base.n, cand.n
    if not n_b or not n_c:
        return OneSided(1.0, 0.0, None, possible=False)
    rank = max(1, math.ceil(q * n_b))
    x = base.order_statistic(rank) or 0.0
    pmf = exceedance_pmf(n_b, rank, n_c)
    at_least = list(_running(reversed(pmf)))[::-1]  # P(K >= k)
    at_most = list(_running(pmf))  # P(K <= k)
    observed = sum(count for value, count in cand.counts.items() if value > margin * x)
    p = min(1.0, at_least[observed])
    k_star = next((k for k in range(n_c + 1) if at_least[k] < alpha), None)
    k_low = next((k for k in range(n_c, -1, -1) if at_most[k] < alpha), None)
    if x <= 0:
        return OneSided(p, 0.0, None, possible=k_star is not None)
    low = 0.0 if k_star is None else (cand.order_statistic(n_c - k_star + 1) or 0.0) / x
    high = None if k_low is None else (cand.order_statistic(n_c - k_low) or 0.0) / x
    return OneSided(p, low, high, possible=k_star is not None)


def _running(values: Iterable[float]) -> Iterable[float]:
    total = 0.0
    for value in values:
        total += value
        yield total


def mean_test(base: Distribution, cand: Distribution, *, margin: float, alpha: float) -> OneSided:
    """Is the candidate's mean above ``margin`` times the baseline's?

    Welch's test of ``mean(c) - margin * mean(b)`` (the unequal-variance
    t-test; Satterthwaite's degrees of freedom taken at the observed ratio):
    on skewed and heavy-tailed values its one-sided false-alarm rate stays at
    or below alpha (docs/compare.md gives the measured rates), where a t-test
    of the log of the ratio does not. The interval is Fieller's: every ratio
    the same test would not reject, in closed form."""
    n_b, n_c = base.n, cand.n
    if n_b < 2 or n_c < 2:
        return OneSided(1.0, 0.0, None, possible=False)
    mb, mc = base.mean() or 0.0, cand.mean() or 0.0
    vb, vc = _variance(base) / n_b, _variance(cand) / n_c
    if not all(map(math.isfinite, (mb, mc, vb, vc))):  # values beyond floating point
        return OneSided(1.0, 0.0, None, possible=False)
    ratio = mc / mb if mb > 0 else math.inf
    if vb + vc <= 0:  # every run alike on both sides: the ratio is known exactly
        p = 0.0 if mc > margin * mb else 1.0
        return OneSided(p, ratio, ratio) if mb > 0 else OneSided(p, 0.0, None)
    df = _welch_df(vb, vc, n_b, n_c, ratio if math.isfinite(ratio) else margin)
    p = student_t_sf((mc - margin * mb) / math.sqrt(vc + margin * margin * vb), df)
    if mb <= 0:
        return OneSided(p, 0.0, None)
    low, high = _fieller(mb, mc, vb, vc, student_t_quantile(1 - alpha, df))
    return OneSided(p, low, high)


def mean_drop_test(
    base: Distribution, cand: Distribution, *, margin: float, alpha: float
) -> OneSided:
    """Is the candidate's mean below ``margin`` times the baseline's? (For a
    statistic where lower is worse, an evaluation score: ``margin`` is
    ``1 - threshold``.)

    :func:`mean_test` turned around: Welch's test of ``margin * mean(b) -
    mean(c)`` and the Fieller interval of the ratio ``mean(c) / mean(b)``,
    with Satterthwaite's degrees of freedom at ``margin``; here its *upper* end is the bound that
    matters: below ``margin`` exactly when ``p_value < alpha``. A baseline mean
    of 0 or less has no ratio to drop from: not judged."""
    n_b, n_c = base.n, cand.n
    if n_b < 2 or n_c < 2:
        return OneSided(1.0, 0.0, None, possible=False)
    mb, mc = base.mean() or 0.0, cand.mean() or 0.0
    vb, vc = _variance(base) / n_b, _variance(cand) / n_c
    if not all(map(math.isfinite, (mb, mc, vb, vc))) or mb <= 0:
        return OneSided(1.0, 0.0, None, possible=False)
    ratio = mc / mb
    if vb + vc <= 0:  # every result alike on both sides: the ratio is known exactly
        return OneSided(0.0 if mc < margin * mb else 1.0, ratio, ratio)
    # Satterthwaite's degrees of freedom at the ratio tested (not at the
    # observed one, as mean_test takes them: a candidate scoring 0 every time
    # would leave one degree of freedom); the interval uses the same, so its
    # upper end is below margin exactly when p < alpha.
    df = _welch_df(vb, vc, n_b, n_c, margin if margin > 0 else ratio)
    p = student_t_sf((margin * mb - mc) / math.sqrt(vc + margin * margin * vb), df)
    low, high = _fieller(mb, mc, vb, vc, student_t_quantile(1 - alpha, df))
    return OneSided(p, low, high)


def _welch_df(vb: float, vc: float, n_b: int, n_c: int, ratio: float) -> float:
    """Satterthwaite's degrees of freedom of ``mean(c) - ratio * mean(b)``."""
    scaled = ratio * ratio * vb
    df = (vc + scaled) ** 2 / (vc * vc / (n_c - 1) + scaled * scaled / (n_b - 1) or 1e-300)
    return max(1.0, df)


def _fieller(mb: float, mc: float, vb: float, vc: float, t: float) -> tuple[float, float | None]:
    """Every ratio ``rho`` with ``|mc - rho mb| / sqrt(vc + rho^2 vb) <= t``
    (``mb > 0``): its ends, each a one-sided bound at the level of ``t``;
    None above: unbounded."""
    ratio = mc / mb
    # T(rho) = (mc - rho mb) / sqrt(vc + rho^2 vb) falls as rho rises; its
    # crossings of +t and -t are the roots of one quadratic (Fieller).
    a, b, c = mb * mb - t * t * vb, -2 * mb * mc, mc * mc - t * t * vc
    roots = _roots(a, b, c)
    low = 0.0 if mc <= t * math.sqrt(vc) else min((r for r in roots if r <= ratio), default=0.0)
    high = None if a <= 0 else max((r for r in roots if r >= ratio), default=ratio)
    return max(0.0, low), high


def _roots(a: float, b: float, c: float) -> list[float]:
    if a == 0:
        return [-c / b] if b else []
    disc = b * b - 4 * a * c
    if disc < 0:
        return []
    root = math.sqrt(disc)
    return [(-b - root) / (2 * a), (-b + root) / (2 * a)]


def student_t_quantile(p: float, df: float) -> float:
    """Student's t ``p`` quantile: Newton's method from the normal quantile."""
    t = normal_quantile(p)
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    for _ in range(50):
        density = math.exp(log_norm - (df + 1) / 2 * math.log1p(t * t / df))
        step = (student_t_sf(t, df) - (1 - p)) / density
        t += step
        if abs(step) < 1e-10 * max(1.0, abs(t)):
            break
    return t


def _variance(dist: Distribution) -> float:
    mean = dist.mean() or 0.0
    n = dist.n
    # (v - mean) * (v - mean), not ** 2: a huge value overflows to inf, never raises
    return (
        sum(c * (v - mean) * (v - mean) for v, c in dist.counts.items()) / (n - 1) if n > 1 else 0.0
    )


def student_t_sf(t: float, df: float) -> float:
    """Upper tail of Student's t with ``df`` degrees of freedom (via the
    regularized incomplete beta function)."""
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    tail = 0.5 * _beta_inc(df / 2, 0.5, df / (df + t * t))
    return tail if t > 0 else 1 - tail


def _beta_inc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b) (continued fraction)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1 - front * _beta_fraction(b, a, 1 - x) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a - 1 + 2 * m) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1 + 2 * m)),
        ):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return h


def fisher_one_sided(a: int, n1: int, c: int, n2: int) -> float:
    """P-value of Fisher's exact test that the second rate (``c`` of ``n2``)
    is above the first (``a`` of ``n1``): ``P(X >= c)`` given the margins."""
    total, hits = n1 + n2, a + c
    if n1 == 0 or n2 == 0 or hits == 0:
        return 1.0
    base = _log_choose(total, hits)
    high = min(hits, n2)
    return min(
        1.0,
        sum(
            math.exp(_log_choose(n2, x) + _log_choose(n1, hits - x) - base)
            for x in range(c, high + 1)
            if hits - x <= n1
        ),
    )
