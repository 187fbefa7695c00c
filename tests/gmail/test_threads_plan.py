"""The thread planner: which conversations go whole through `threads.get`, which message by message."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingester.gmail.threads import THREAD_MIN_UNKNOWN, FetchPlan, ThreadWant, plan_fetches
from tests.fakes.mailbox import MAILING_LISTS, SINGLES, TYPICAL, ConversationMix, Mailbox


@pytest.mark.parametrize(
    ("due", "ahead", "expected"),
    [
        ([], [], FetchPlan((), ())),
        ([("a", "t")], [], FetchPlan((), ("a",))),
        ([("a", "t"), ("b", "t")], [], FetchPlan((), ("a", "b"))),  # two cost the same either way: stay single
        ([("a", "t"), ("b", "t"), ("c", "t")], [], FetchPlan((ThreadWant("t", ("a", "b", "c")),), ())),
        # the third unknown message is on a later page: the thread is fetched whole and settles it too
        ([("a", "t"), ("x", "u")], [("b", "t"), ("c", "t")], FetchPlan((ThreadWant("t", ("a", "b", "c")),), ("x",))),
        # a thread only ahead waits for its own page
        ([("x", "u")], [("b", "t"), ("c", "t"), ("d", "t")], FetchPlan((), ("x",))),
        # ids without a thread (retries) are always fetched one by one
        ([("a", None), ("b", None), ("c", None)], [], FetchPlan((), ("a", "b", "c"))),
        # listing order is kept, duplicates once
        ([("b", "t"), ("a", "s"), ("b", "t")], [], FetchPlan((), ("b", "a"))),
    ],
)
def test_plans(due: list[tuple[str, str | None]], ahead: list[tuple[str, str | None]], expected: FetchPlan) -> None:
    assert plan_fetches(due, ahead) == expected


listed = st.lists(
    st.tuples(st.sampled_from("abcdefghijklmnopqrstuvwxyz"), st.one_of(st.none(), st.sampled_from("TUVW"))),
    max_size=30,
    unique_by=lambda pair: pair[0],
)


@given(listed, st.integers(min_value=0, max_value=30))
def test_every_due_id_is_settled_once_and_never_dearer_than_single_gets(
    pairs: list[tuple[str, str | None]], cut: int
) -> None:
    due, ahead = pairs[:cut], pairs[cut:]
    plan = plan_fetches(due, ahead)
    in_threads = [i for want in plan.threads for i in want.ids]
    assert len(in_threads) == len(set(in_threads)) and not set(in_threads) & set(plan.messages)
    assert {i for i, _ in due} <= plan.settles() <= {i for i, _ in pairs}
    assert all(len(want.ids) >= THREAD_MIN_UNKNOWN for want in plan.threads)
    # Per settled message a plan never spends more than messages.get would (5 units each).
    assert plan.units <= 5 * len(plan.settles())


@pytest.mark.parametrize(("mix", "low", "high"), [(SINGLES, 1.0, 1.0), (TYPICAL, 1.9, 2.5), (MAILING_LISTS, 5, 12)])
def test_the_fake_mailbox_makes_the_conversation_mix_asked_for(mix: ConversationMix, low: float, high: float) -> None:
    box = Mailbox.generate(6000, seed=5, mix=mix)
    sizes = [len(members) for members in box.threads.values()]
    assert sum(sizes) == 6000 and low <= 6000 / len(sizes) <= high
    # Members interleave with other conversations: a thread spans more than its own length in the listing.
    position = {gmail_id: index for index, gmail_id in enumerate(box.order)}
    spans = [position[m[0]] - position[m[-1]] for m in box.threads.values() if len(m) > 2]
    assert mix is SINGLES or max(spans) > 500
