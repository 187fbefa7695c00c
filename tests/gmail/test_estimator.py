"""The sample estimator (shared.sampling.estimator): exact on a whole sample, unbiased, intervals that cover."""

from __future__ import annotations

import random
from collections import defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from shared.sampling.estimator import GroupSums, SampleSums, estimate_groups, wilson

Thread = list[tuple[str, int, bool]]  # (sender, bytes, unread) per counted message


def _mailbox(seed: int, *, threads: int = 3000, senders: int = 60) -> list[Thread]:
    rng = random.Random(seed)
    weights = [1 / (r + 1) ** 1.1 for r in range(senders)]
    names = [f"s{r}" for r in range(senders)]
    box = []
    for _ in range(threads):
        size = 1 if rng.random() < 0.55 else 2 + int(rng.expovariate(1 / 1.5))
        starter = rng.choices(names, weights=weights)[0]
        box.append(
            [
                (
                    starter if rng.random() < 0.6 else rng.choices(names, weights=weights)[0],
                    rng.randint(2000, 80000),
                    rng.random() < 0.3,
                )
                for _ in range(size)
            ]
        )
    return box


def _sums(box: list[Thread], sampled: list[int]) -> tuple[SampleSums, list[GroupSums]]:
    """What `shared.sampling.sample_reads` computes in SQL, computed here from plain lists."""
    acc: dict[str, list[float]] = defaultdict(lambda: [0.0] * 9)
    x_total = x_squares = 0.0
    for index in sampled:
        thread = box[index]
        x = float(len(thread))
        x_total += x
        x_squares += x * x
        per: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
        for sender, size, unread in thread:
            per[sender][0] += 1
            per[sender][1] += size
            per[sender][2] += unread
        for sender, (y, b, u) in per.items():
            for i, value in enumerate((1, y, y * y, b, b * b, u, u * u, u * y, x * y)):
                acc[sender][i] += value
    groups = [GroupSums(k, int(a[0]), *a[1:]) for k, a in acc.items()]
    return SampleSums(len(box), len(sampled), x_total, x_squares), groups


def _truth(box: list[Thread]) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    messages: dict[str, int] = defaultdict(int)
    size: dict[str, int] = defaultdict(int)
    unread: dict[str, int] = defaultdict(int)
    for thread in box:
        for sender, b, u in thread:
            messages[sender] += 1
            size[sender] += b
            unread[sender] += u
    return messages, size, unread


def test_a_whole_sample_is_exact_with_no_width() -> None:
    box = _mailbox(1, threads=500)
    messages, size, unread = _truth(box)
    found = estimate_groups(*_sums(box, list(range(len(box)))))
    total = sum(messages.values())
    for e in found:
        assert (e.messages.low, e.messages.estimate, e.messages.high) == (messages[e.key],) * 3
        assert (e.bytes.low, e.bytes.high) == (size[e.key], size[e.key])
        assert abs(e.share.estimate - messages[e.key] / total) < 1e-12 and e.share.low == e.share.high
        assert abs(e.unread_share.estimate - unread[e.key] / messages[e.key]) < 1e-12
    ranked = sorted(messages, key=lambda k: (-messages[k], k))
    assert [e.key for e in found] == ranked
    assert [e.rank for e in found] == list(range(1, len(found) + 1))


def test_an_empty_sample_knows_nothing() -> None:
    assert estimate_groups(SampleSums(100, 0), []) == []


def test_intervals_cover_the_truth_for_senders_of_50_or_more_over_seeds() -> None:
    box = _mailbox(2)
    messages, size, _ = _truth(box)
    big = [k for k, v in messages.items() if v >= 50]
    covered = tried = 0
    covered_bytes = 0
    for seed in range(40):
        rng = random.Random(seed)
        sampled = rng.sample(range(len(box)), len(box) // 10)
        found = {e.key: e for e in estimate_groups(*_sums(box, sampled))}
        for key in big:
            tried += 1
            e = found.get(key)
            covered += e is not None and e.messages.low <= messages[key] <= e.messages.high
            covered_bytes += e is not None and e.bytes.low <= size[key] <= e.bytes.high
    assert covered / tried >= 0.93 and covered_bytes / tried >= 0.93


def test_the_expansion_estimate_is_unbiased_over_seeds() -> None:
    box = _mailbox(3, threads=800)
    messages, _, _ = _truth(box)
    top = max(messages, key=lambda k: messages[k])
    draws = []
    for seed in range(300):
        sampled = random.Random(seed).sample(range(len(box)), 80)
        found = {e.key: e for e in estimate_groups(*_sums(box, sampled))}
        draws.append(found[top].messages.estimate if top in found else 0.0)
    mean = sum(draws) / len(draws)
    assert abs(mean - messages[top]) < 0.05 * messages[top]


def test_ranks_and_the_too_wide_flag_follow_the_intervals() -> None:
    box = _mailbox(4)
    sampled = random.Random(0).sample(range(len(box)), 300)
    found = estimate_groups(*_sums(box, sampled))
    for e in found:
        assert e.rank_best <= e.rank <= e.rank_worst
        assert e.too_wide_to_rank == (e.messages.margin > 0.5 * e.messages.estimate)
    assert not found[0].too_wide_to_rank and found[-1].too_wide_to_rank


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 400), st.integers(0, 400))
def test_wilson_is_a_proper_interval(successes: int, n: int, extra: int) -> None:
    k = min(successes, n)
    low, high = wilson(k, n + extra)
    assert 0 <= low <= k / (n + extra) <= high <= 1


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 200))
def test_any_sample_gives_ordered_intervals_holding_what_it_saw(seed: int, n: int) -> None:
    box = _mailbox(seed % 50, threads=200, senders=15)
    sampled = random.Random(seed).sample(range(len(box)), n)
    sample, groups = _sums(box, sampled)
    seen = {g.key: g.messages for g in groups}
    for e in estimate_groups(sample, groups):
        for value in (e.messages, e.bytes, e.share, e.unread_share):
            assert value.low <= value.estimate <= value.high
        assert e.messages.low >= seen[e.key]
        assert e.share.low >= 0 and e.share.high <= 1
