"""The buyer's language (edge.domain.language): the first preference that names a language the
node speaks decides, a header's weights rank its entries, and nothing a browser or a page sends
makes it fail."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edge.domain.language import DEFAULT, LANGUAGES, negotiate, ranked

UNSUPPORTED = ("ja", "zh", "sv", "cs", "tr")
tags = st.sampled_from(LANGUAGES + UNSUPPORTED)
regions = st.sampled_from(("", "-AT", "-BR", "_PT", "-419", "-Latn-RS", "-ch"))
weights = st.integers(0, 1000).map(lambda n: n / 1000)


@pytest.mark.parametrize(
    ("preferences", "expected"),
    [
        (("de-AT",), "de"),
        (("pt-BR",), "pt"),
        (("PL",), "pl"),
        (("fr_CA",), "fr"),
        ((None, "", "nl"), "nl"),
        (("ja", "es"), "es"),  # the element's unsupported lang gives way to the next
        (("it", "de"), "it"),  # the first supported one wins, whatever follows
        (("fr-CH, fr;q=0.9, en;q=0.8, de;q=0.7, *;q=0.5",), "fr"),
        (("en;q=0.5, de",), "de"),  # weight over order
        (("ja, pl;q=0.3, es;q=0.2",), "pl"),
        (("de;q=0, fr;q=0.1",), "fr"),  # q=0: refused
        (("*",), DEFAULT),
        (("",), DEFAULT),
        ((), DEFAULT),
        (("de;q=abc, it",), "it"),  # a malformed weight leaves its entry out
        (("nl;q=2",), DEFAULT),
        (("pt;q=nan, es;q=inf",), DEFAULT),
        (("x-klingon, i-default, es",), "es"),
    ],
)
def test_examples(preferences: tuple[str | None, ...], expected: str) -> None:
    assert negotiate(*preferences) == expected


@given(st.lists(st.one_of(st.none(), st.text())))
def test_never_raises_and_always_answers_a_language_it_speaks(
    preferences: list[str | None],
) -> None:
    assert negotiate(*preferences) in LANGUAGES


@given(st.text())
def test_any_header_is_ranked_into_plain_subtags(header: str) -> None:
    for primary in ranked(header):
        assert primary.isascii() and primary.isalpha() and primary == primary.lower()


@given(st.lists(st.tuples(tags, regions, weights), min_size=1, max_size=8))
def test_the_heaviest_supported_entry_of_a_header_wins(
    entries: list[tuple[str, str, float]],
) -> None:
    header = ", ".join(f"{tag}{region};q={q}" for tag, region, q in entries)
    supported = [
        (q, -i, tag) for i, (tag, _, q) in enumerate(entries) if tag in LANGUAGES and q > 0
    ]
    expected = max(supported)[2] if supported else DEFAULT
    assert negotiate(header) == expected


@given(tags, regions, st.text())
def test_an_explicit_supported_tag_wins_over_any_header(tag: str, region: str, header: str) -> None:
    if tag in LANGUAGES:
        assert negotiate(tag + region, header) == tag
    else:
        assert negotiate(tag + region, header) == negotiate(header)


@given(st.lists(st.tuples(tags, weights), min_size=2, max_size=6))
def test_the_order_of_a_header_decides_only_between_equal_weights(
    entries: list[tuple[str, float]],
) -> None:
    header = ", ".join(f"{tag};q={q}" for tag, q in entries)
    reordered = ", ".join(f"{tag};q={q}" for tag, q in sorted(entries, key=lambda e: -e[1]))
    assert negotiate(header) == negotiate(reordered)
