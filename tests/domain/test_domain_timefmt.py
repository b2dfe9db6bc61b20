import pytest

from edge.domain.errors import InvalidInput
from edge.domain.timefmt import iso_ms, parse_iso_ms

T = 1795254480000  # 2026-11-21T09:48:00.000Z


def test_format():
    assert iso_ms(T) == "2026-11-21T09:48:00.000Z"
    assert iso_ms(T + 12_345) == "2026-11-21T09:48:12.345Z"
    assert iso_ms(0) == "1970-01-01T00:00:00.000Z"
    assert iso_ms(-1) == "1969-12-31T23:59:59.999Z"


@pytest.mark.parametrize(
    "text,expected",
    [
        ("2026-11-21T09:48:00.000Z", T),
        ("2026-11-21T09:48:00Z", T),
        ("2026-11-21T10:48:00+01:00", T),
        ("2026-11-21T09:48:00.123456+00:00", T + 123),
        ("2026-11-21T09:48:00.5Z", T + 500),
        ("2026-11-21T04:18:00.000-05:30", T),
    ],
)
def test_parse(text, expected):
    assert parse_iso_ms(text) == expected


def test_round_trip():
    for ms in (0, 1, 999, T, T + 1, 253402300799999, -62135596800000):
        assert parse_iso_ms(iso_ms(ms)) == ms


@pytest.mark.parametrize(
    "bad", ["", "yesterday", "2026-11-21", "2026-11-21T09:48:00", "2026-13-01T00:00:00Z",
            "2026-11-21T09:48:00.000Z ", None, 5, "２０２６-11-21T09:48:00Z", "x" * 1000],
)  # fmt: skip
def test_parse_rejects(bad):
    with pytest.raises(InvalidInput) as e:
        parse_iso_ms(bad, field="occurredAt")
    assert e.value.field == "occurredAt"
