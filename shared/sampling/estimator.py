"""Estimates with 95% intervals from a simple random sample of threads (a first scan in random order). Pure: no I/O.

The sampling unit is the thread: a first full scan fetches whole threads in a uniformly random permutation, so the
`n` threads settled so far are a simple random sample without replacement of the mailbox's `N` listed threads. For a
group (a sender or a domain), `y_t` is its counted messages in thread `t`, `b_t` their bytes, `u_t` the unread ones,
and `x_t` every counted message of the thread. Then (Cochran, Sampling Techniques, ch. 2 and 6):

* totals (messages, bytes): the expansion estimator `N * mean(y)`, unbiased, with variance
  `N² (1 - n/N) s²_y / n`; for a group seen in few sampled threads the normal interval is too narrow, so the interval
  is widened to also hold `N * p * a` with `p`'s Wilson score interval (`p` the share of threads holding the group,
  with `n / (1 - n/N)` as the sample size) and `a`'s normal one (`a` its mean per such thread), combined on the
  relative scale;
* shares (of all messages, and the unread share of a group's messages): the ratio estimator `sum(y) / sum(x)`, with
  the linearised variance `(1 - n/N) / (n * mean(x)²) * s²_d`, `d_t = y_t - R x_t`; intervals are clipped to [0, 1].

With the whole mailbox sampled (`n = N`) every variance is zero and each estimate is the exact count.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054
# A figure whose interval's half-width is over this share of the estimate has no rank worth showing.
RANKABLE_MARGIN = 0.5


@dataclass(frozen=True, slots=True)
class SampleSums:
    """The whole sample: threads listed (`N`) and settled (`n`), and the sums of `x_t` and `x_t²`."""

    threads_total: int
    threads_sampled: int
    messages: float = 0.0
    messages_sq: float = 0.0


@dataclass(frozen=True, slots=True)
class GroupSums:
    """One sender's or domain's sums over the sampled threads (threads without its mail add zeros)."""

    key: str
    threads: int  # sampled threads holding at least one of its counted messages
    messages: float  # sum y
    messages_sq: float  # sum y²
    bytes: float  # sum b
    bytes_sq: float  # sum b²
    unread: float  # sum u
    unread_sq: float  # sum u²
    unread_messages: float  # sum u*y
    thread_messages: float  # sum x*y


@dataclass(frozen=True, slots=True)
class Interval:
    estimate: float
    low: float
    high: float

    @property
    def margin(self) -> float:
        """Half the interval's width (the "± 300" of "≈ 4,800 ± 300")."""
        return (self.high - self.low) / 2


@dataclass(frozen=True, slots=True)
class Estimate:
    key: str
    messages: Interval
    bytes: Interval
    share: Interval  # of every counted message in the mailbox
    unread_share: Interval  # of the group's own messages
    rank: int  # by estimated messages, 1 = most
    rank_best: int  # the best and worst places the intervals allow
    rank_worst: int
    too_wide_to_rank: bool


def _variance(total: float, squares: float, n: int) -> float:
    """The sample variance of a variable from its sum and sum of squares over `n` units (0 below two units)."""
    if n < 2:
        return 0.0
    return max(squares - total * total / n, 0.0) / (n - 1)


# Student's t quantile (97.5 %) over the normal one, by degrees of freedom: a mean of few threads is less sure.
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}


def _student_factor(df: int) -> float:
    if df <= 0:
        return 1.0
    if df in _T975:
        return _T975[df] / Z95
    return 1.0 + 2.4 / (4 * df)  # Fisher's expansion, close enough past ten


def _finite(sample: SampleSums) -> float:
    """The finite population correction `1 - n/N`."""
    if sample.threads_total <= 0:
        return 0.0
    return max(1.0 - sample.threads_sampled / sample.threads_total, 0.0)


def wilson(successes: int, n: float, *, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion; `n` may be an effective (real-valued) size; (0, 1) for none."""
    if n <= 0:
        return 0.0, 1.0
    p = min(successes / n, 1.0)
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(min(centre - half, p), 0.0), min(max(centre + half, p), 1.0)


def estimate_total(sample: SampleSums, total: float, squares: float, *, threads: int, z: float = Z95) -> Interval:
    """The expansion estimate of a group's total and its interval (see the module's docstring)."""
    n, big_n = sample.threads_sampled, sample.threads_total
    if n <= 0:
        return Interval(0.0, 0.0, math.inf)
    fpc = _finite(sample)
    estimate = big_n * total / n
    margin = z * big_n * math.sqrt(fpc * _variance(total, squares, n) / n)
    low, high = estimate - margin, estimate + margin
    if fpc > 0 and threads > 0 and estimate > 0:
        # Few threads: the total is N * p * a (p the share of threads holding the group, a its mean per such
        # thread); p's Wilson interval and a's normal one combine on the relative scale.
        p = threads / n
        low_p, high_p = wilson(threads, n / fpc, z=z)
        per_thread = total / threads
        t = z * _student_factor(threads - 1)
        spread = t * math.sqrt(fpc * _variance(total, squares, threads) / threads) / per_thread if per_thread else 0.0
        below = math.hypot(1 - low_p / p, spread)
        above = math.hypot(high_p / p - 1, spread)
        low, high = min(low, estimate * (1 - below)), max(high, estimate * (1 + above))
    observed = total  # every sampled message is real: the total is at least what the sample holds
    return Interval(estimate, max(low, observed), max(high, estimate))


def estimate_ratio(
    sample: SampleSums, *, y: float, x: float, yy: float, xx: float, xy: float, z: float = Z95
) -> Interval:
    """The ratio estimate `sum(y) / sum(x)` and its linearised interval, clipped to [0, 1]."""
    n = sample.threads_sampled
    if n <= 0 or x <= 0:
        return Interval(0.0, 0.0, 1.0)
    ratio = y / x
    deviations = max(yy - 2 * ratio * xy + ratio * ratio * xx, 0.0)
    mean_x = x / n
    variance = _finite(sample) / (n * mean_x * mean_x) * (deviations / (n - 1) if n > 1 else 0.0)
    margin = z * math.sqrt(variance)
    return Interval(ratio, max(ratio - margin, 0.0), min(ratio + margin, 1.0))


def estimate_groups(sample: SampleSums, groups: Sequence[GroupSums], *, z: float = Z95) -> list[Estimate]:
    """Every group's estimates, most messages first, with its estimated rank and the places its interval allows."""
    found = []
    for g in groups:
        messages = estimate_total(sample, g.messages, g.messages_sq, threads=g.threads, z=z)
        size = estimate_total(sample, g.bytes, g.bytes_sq, threads=g.threads, z=z)
        share = estimate_ratio(
            sample, y=g.messages, x=sample.messages, yy=g.messages_sq, xx=sample.messages_sq, xy=g.thread_messages, z=z
        )
        unread = estimate_ratio(
            sample, y=g.unread, x=g.messages, yy=g.unread_sq, xx=g.messages_sq, xy=g.unread_messages, z=z
        )
        found.append((g.key, messages, size, share, unread))
    found.sort(key=lambda item: (-item[1].estimate, item[0]))
    lows = sorted(item[1].low for item in found)
    highs = sorted(item[1].high for item in found)
    result = []
    for rank, (key, messages, size, share, unread) in enumerate(found, start=1):
        surely_above = len(lows) - bisect.bisect_right(lows, messages.high)  # others whose low beats my high
        maybe_above = len(highs) - bisect.bisect_left(highs, messages.low) - 1  # others whose high reaches my low
        wide = messages.estimate <= 0 or messages.margin > RANKABLE_MARGIN * messages.estimate
        result.append(
            Estimate(key, messages, size, share, unread, rank, surely_above + 1, max(maybe_above, 0) + 1, wide)
        )
    return result
