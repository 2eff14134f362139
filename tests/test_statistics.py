"""The statistics behind intervals and verdicts, on cases with a known answer: Student's t against its
closed forms, the tests' false-positive rates and coverage on simulated rounds, the paired test
cancelling drift that Welch's cannot, the pooled test seeing the between-run variance, the
resolvable change being detected as often as it promises, and Benjamini-Hochberg's control."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dbench.stats.differences import ALPHA, paired, paired_rounds_to_resolve, pooled, welch
from dbench.stats.fdr import bh_adjusted
from dbench.stats.student import betainc, t_cdf, t_quantile, t_two_sided_p

SIMULATIONS = 1000
"""Binomial SD of an 80 % rate over 1000 trials: 1.3 %; the detection bounds below sit over 10 SD out."""
LEVEL_SIMULATIONS = 3000
"""Trials behind a false-positive rate: binomial SD 0.4 % at 5 %."""
LEVEL_BOUNDS = (0.025, 0.068)
"""Where a test at the 5 % level may land over LEVEL_SIMULATIONS trials: at most 4.5 SD above 5 % (never
anti-conservative), and at least half the level (Welch is conservative with few rounds and unequal spreads:
3.85 % at 3 rounds a side, 4.6 % at 5, 4.9 % at 10, each over 40,000 simulations; the pooled test 5.3 %
over 20,000), which is 3.8 SD below the most conservative of them."""


@pytest.mark.parametrize("p", [0.6, 0.8, 0.9, 0.975, 0.995])
def test_student_quantiles_match_their_closed_forms(p):
    assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-9)  # Cauchy
    assert t_quantile(p, 2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), rel=1e-9)
    assert t_quantile(1 - p, 2) == pytest.approx(-t_quantile(p, 2), rel=1e-12)


def test_student_against_table_values_and_the_normal_limit():
    assert t_quantile(0.975, 2) == pytest.approx(4.302653, abs=1e-6)
    assert t_quantile(0.975, 10) == pytest.approx(2.228139, abs=1e-6)
    assert t_quantile(0.8, 4) == pytest.approx(0.940965, abs=1e-6)
    assert t_quantile(0.975, 1e7) == pytest.approx(1.959964, abs=1e-5)
    assert t_two_sided_p(t_quantile(0.975, 3.7), 3.7) == pytest.approx(0.05, abs=1e-10)  # fractional df (Welch)
    assert t_cdf(0.0, 5) == 0.5 and t_two_sided_p(math.inf, 3) == 0.0


def test_incomplete_beta_special_cases():
    for x in (0.1, 0.5, 0.93):
        assert betainc(1, 1, x) == pytest.approx(x)
        assert betainc(3, 1, x) == pytest.approx(x**3)
        assert betainc(2.5, 4, x) == pytest.approx(1 - betainc(4, 2.5, 1 - x))


def rounds(rng, n: int, median: float = 100.0, sd: float = 0.05) -> np.ndarray:
    return median * np.exp(sd * rng.standard_normal(n))


@pytest.mark.parametrize("n", [3, 5, 10])
def test_welch_on_identical_sides_rejects_at_its_level_and_covers_the_true_ratio(n, seed):
    rng = np.random.default_rng(seed)
    results = [welch(rounds(rng, n), rounds(rng, n, sd=0.08)) for _ in range(LEVEL_SIMULATIONS)]
    rejected = sum(d.p <= ALPHA for d in results) / LEVEL_SIMULATIONS
    covered = sum(d.low <= 1.0 <= d.high for d in results) / LEVEL_SIMULATIONS
    assert LEVEL_BOUNDS[0] <= rejected <= LEVEL_BOUNDS[1] and covered == pytest.approx(1 - rejected, abs=1e-9)


def test_the_resolvable_change_is_detected_about_as_often_as_promised(seed):
    """Shift b by exactly the resolvable change the test reports for this noise: found ~80 % of the time."""
    rng = np.random.default_rng(seed)
    n, sd = 5, 0.04
    change = welch(rounds(rng, n, sd=sd), rounds(rng, n, sd=sd)).resolvable  # depends on the drawn spread
    expected = np.mean([welch(rounds(rng, n, sd=sd), rounds(rng, n, sd=sd)).resolvable for _ in range(200)])
    found = (
        sum(
            welch(rounds(rng, n, sd=sd), rounds(rng, n, 100.0 * (1 + expected), sd)).p <= ALPHA
            for _ in range(SIMULATIONS)
        )
        / SIMULATIONS
    )
    assert change > 0 and 0.65 <= found <= 0.95, (expected, found)


def test_paired_rounds_cancel_drift_that_welch_cannot(seed):
    """A machine whose speed drifts 20 % between rounds, and b truly 4 % slower in every round."""
    rng = np.random.default_rng(seed)
    detected_paired = detected_welch = 0
    for _ in range(200):
        drift = np.exp(0.2 * rng.standard_normal(5))
        a = 100 * drift * np.exp(0.005 * rng.standard_normal(5))
        b = 104 * drift * np.exp(0.005 * rng.standard_normal(5))
        detected_paired += paired(a, b).p <= ALPHA
        detected_welch += welch(a, b).p <= ALPHA
    assert detected_paired >= 190 and detected_welch <= 40


def test_the_rounds_said_to_resolve_a_change_find_it_about_as_often_as_promised(seed):
    """Five pairs of a noisy interleaved run (each pair's log difference SD 12 %, under a 20 % drift the
    pairs share) say how many rounds would resolve 10 %; a paired test over that many rounds finds a true
    10 % change about 80 % of the time (the power the resolvable change is defined by)."""
    rng = np.random.default_rng(seed)
    sd, change = 0.12, 0.10

    def pairs(n: int, factor: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
        drift = np.exp(0.2 * rng.standard_normal(n))
        a, b = 100 * drift * np.exp(sd / math.sqrt(2) * rng.standard_normal((2, n)))
        return a, factor * b

    needed = [paired_rounds_to_resolve(paired(*pairs(5)), 5, change) for _ in range(201)]
    rounds_needed = int(np.median(needed))
    exact = next(
        n
        for n in range(2, 1000)
        if (t_quantile(0.975, n - 1) + t_quantile(0.8, n - 1)) * sd / math.sqrt(n) <= math.log1p(change)
    )
    assert abs(rounds_needed - exact) <= 0.35 * exact, (rounds_needed, exact)  # 5 pairs estimate the SD roughly
    found = sum(paired(*pairs(rounds_needed, 1 + change)).p <= ALPHA for _ in range(SIMULATIONS)) / SIMULATIONS
    assert 0.6 <= found <= 0.95, (rounds_needed, found)
    spread = paired(np.full(5, 100.0), 100.0 * np.exp([0.3, -0.3, 0.3, -0.3, 0.0]))  # an SD of 26 % a pair
    assert (
        paired_rounds_to_resolve(spread, 5, change) > 50
        and paired_rounds_to_resolve(spread, 5, change, most=50) is None
    )


def test_pooled_runs_see_the_between_run_variance_that_rounds_miss(seed):
    """Each run carries its own offset (SD 6 %) that its rounds share: a test over one run's rounds a
    side calls identical configurations different far too often; the runs' spread does not."""
    rng = np.random.default_rng(seed)

    def run() -> np.ndarray:
        return rounds(rng, 5, 100.0 * math.exp(0.06 * rng.standard_normal()), sd=0.01)

    welch_false = sum(welch(run(), run()).p <= ALPHA for _ in range(500)) / 500
    pooled_false = (
        sum(
            pooled([np.log(run()).mean() for _ in range(3)], [np.log(run()).mean() for _ in range(3)]).p <= ALPHA
            for _ in range(LEVEL_SIMULATIONS)
        )
        / LEVEL_SIMULATIONS
    )
    assert welch_false > 0.5 and LEVEL_BOUNDS[0] <= pooled_false <= LEVEL_BOUNDS[1]


def test_tests_without_spread_or_rounds_give_nothing():
    assert welch([1.0, 1.0, 1.0], [1.0, 1.0, 1.0]) is None
    assert welch([1.0], [1.0, 2.0]) is None and paired([1.0], [2.0]) is None
    assert pooled([0.0], [0.1]) is None


def test_benjamini_hochberg_adjusted_values():
    assert bh_adjusted([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert bh_adjusted([0.5]) == [0.5] and bh_adjusted([]) == []


def test_a_table_of_identical_kernels_rarely_shows_any_change(seed):
    """100 kernels all unchanged: with per-kernel 5 % tests a table shows ~5 changes; with the FDR
    control, a table shows any change at most about 5 % of the time."""
    rng = np.random.default_rng(seed)
    tables, per_kernel = 100, 100
    any_change = raw = 0
    for _ in range(tables):
        p = [welch(rounds(rng, 3), rounds(rng, 3)).p for _ in range(per_kernel)]
        raw += sum(v <= ALPHA for v in p)
        any_change += any(q <= 0.05 for q in bh_adjusted(p))
    assert raw / tables > 3 and any_change / tables <= 0.12


def test_digamma_and_trigamma_against_known_values():
    from dbench.stats.moderation import digamma, trigamma, trigamma_inverse

    assert digamma(1.0) == pytest.approx(-0.5772156649015329, abs=1e-9)
    assert digamma(0.5) == pytest.approx(-0.5772156649015329 - 2 * math.log(2), abs=1e-9)
    assert trigamma(1.0) == pytest.approx(math.pi**2 / 6, abs=1e-9) and trigamma(0.5) == pytest.approx(
        math.pi**2 / 2, abs=1e-9
    )
    for x in (0.3, 1.0, 3.7, 40.0):
        assert trigamma_inverse(trigamma(x)) == pytest.approx(x, rel=1e-6)


def inverse_chi_square(rng, n: int, scale: float, df: float) -> np.ndarray:
    """Kernels' true paired variances around `scale` with `df` degrees of freedom (the prior's model)."""
    return scale * df / rng.chisquare(df, n)


def test_the_prior_is_recovered_from_kernels_variances(seed):
    from dbench.stats.moderation import MAX_PRIOR_DF, fit_prior

    rng = np.random.default_rng(seed)
    true = inverse_chi_square(rng, 4000, 0.02**2, 4.0)
    observed = true * rng.chisquare(2, true.size) / 2  # each from 3 rounds: 2 degrees of freedom
    prior = fit_prior(list(observed), [2.0] * true.size)
    assert prior.df == pytest.approx(4.0, rel=0.45) and math.sqrt(prior.variance) == pytest.approx(0.02, rel=0.1)
    same = fit_prior(list(0.0004 * rng.chisquare(2, 4000) / 2), [2.0] * 4000)  # one variance for all: d0 large, capped
    assert same.df == MAX_PRIOR_DF and math.sqrt(same.variance) == pytest.approx(0.02, rel=0.1)
    assert fit_prior([0.1, 0.0], [2.0, 2.0]) is None  # too few kernels with a spread


def interleaved_table(rng, kernels: int, rounds: int, change: float = 1.0) -> list[tuple[np.ndarray, np.ndarray]]:
    """An interleaved run's kernels: a drift shared by both variants round by round (20 %), and paired
    noise whose SD differs between kernels (the prior's model); b is `change` times a."""
    sds = np.sqrt(inverse_chi_square(rng, kernels, 0.02**2, 6.0) / 2)
    table = []
    for sd in sds:
        drift = np.exp(0.2 * rng.standard_normal(rounds))
        table.append(
            (
                100 * drift * np.exp(sd * rng.standard_normal(rounds)),
                100 * change * drift * np.exp(sd * rng.standard_normal(rounds)),
            )
        )
    return table


def test_moderated_paired_tests_keep_the_level_and_find_more(seed):
    """Tables of 50 interleaved kernels at 3 rounds: unchanged, the moderated paired test rejects at
    about 5 % per kernel (and BH keeps whole tables clean); a true 5 % change is found far more often
    than by each kernel's own 2-degree-of-freedom variance."""
    from dbench.stats.differences import paired_variance
    from dbench.stats.moderation import fit_prior

    rng = np.random.default_rng(seed)

    def prior_of(table):
        found = [paired_variance(a, b) for a, b in table]
        return fit_prior([v for v, _ in found], [d for _, d in found])

    rejected = tested = dirty = 0
    for _ in range(60):
        table = interleaved_table(rng, 50, 3)
        prior = prior_of(table)
        p = [paired(a, b, prior).p for a, b in table]
        rejected += sum(v <= ALPHA for v in p)
        tested += len(p)
        dirty += any(q <= 0.05 for q in bh_adjusted(p))
    assert LEVEL_BOUNDS[0] <= rejected / tested <= LEVEL_BOUNDS[1] and dirty / 60 <= 0.15, (rejected / tested, dirty)
    found_plain = found_moderated = 0
    for _ in range(20):
        table = interleaved_table(rng, 50, 3, change=1.05)
        prior = prior_of(table)
        found_plain += sum(paired(a, b).p <= ALPHA for a, b in table)
        found_moderated += sum(paired(a, b, prior).p <= ALPHA for a, b in table)
    assert found_moderated > 1.5 * found_plain, (found_plain, found_moderated)
