"""Every catalogue part under edge/i18n (buyer, pay, and any added later) speaks every language
of edge.domain.language: one file per language, exactly the keys English has, and per key the
same ``{placeholders}`` (a translation that drops or misspells one would show a raw brace or
lose the amount). Each text is a translation, not an empty string; and the loader merges the
parts and fills placeholders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edge import i18n
from edge.domain.language import DEFAULT, LANGUAGES

ROOT = Path(i18n.__file__).resolve().parent
PARTS = sorted(p.name for p in ROOT.iterdir() if p.is_dir() and p.name != "__pycache__")
# texts that read the same in a language as in English on purpose (a word both share)
SAME_AS_ENGLISH_AT_MOST = 0.25


def load(part: str, lang: str) -> dict[str, str]:
    path = ROOT / part / f"{lang}.json"
    assert path.is_file(), f"{path.relative_to(ROOT.parent.parent)} is missing"
    loaded = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def test_there_is_the_buyers_part_at_least() -> None:
    assert "buyer" in PARTS


def test_every_part_has_a_file_per_language_and_no_other() -> None:
    for part in PARTS:
        files = sorted(p.stem for p in (ROOT / part).iterdir() if p.suffix == ".json")
        assert files == sorted(LANGUAGES), part


@pytest.mark.parametrize("part", PARTS)
@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_language_has_exactly_the_keys_and_placeholders_of_english(part: str, lang: str) -> None:
    english = load(part, DEFAULT)
    words = load(part, lang)
    assert sorted(set(english) - set(words)) == [], f"{part}/{lang}.json lacks these keys"
    assert sorted(set(words) - set(english)) == [], f"{part}/{lang}.json has keys English lacks"
    for key, text in words.items():
        assert isinstance(text, str) and text.strip(), f"{part}/{lang}.json: {key} is empty"
        assert i18n.placeholders(text) == i18n.placeholders(english[key]), (
            f"{part}/{lang}.json: {key} has other placeholders than English"
        )
        # a brace that is no placeholder is a typo ("{ price}", "{price")
        assert text.count("{") == text.count("}") == len(i18n.PLACEHOLDER.findall(text)), (
            f"{part}/{lang}.json: {key} has a stray brace"
        )


@pytest.mark.parametrize("part", PARTS)
@pytest.mark.parametrize("lang", [lang for lang in LANGUAGES if lang != DEFAULT])
def test_a_language_is_translated_not_copied(part: str, lang: str) -> None:
    english = load(part, DEFAULT)
    words = load(part, lang)
    same = [key for key, text in words.items() if text == english[key]]
    assert len(same) <= SAME_AS_ENGLISH_AT_MOST * len(english), (
        f"{part}/{lang}.json repeats English in {same}"
    )


def test_no_key_is_in_two_parts() -> None:
    seen: dict[str, str] = {}
    for part in PARTS:
        for key in load(part, DEFAULT):
            assert key not in seen, f"{key} is in {seen.get(key)} and {part}"
            seen[key] = part


def test_the_loader_merges_every_part_and_fills_placeholders() -> None:
    merged = i18n.words("de")
    for part in PARTS:
        assert set(load(part, DEFAULT)) <= set(merged)
    assert i18n.say("de", "handoff.redirect", provider="PayPal") == (
        "PayPal: Sie werden zur Zahlungsseite weitergeleitet…"
    )
    assert i18n.say("xx", "return.back") == i18n.say("en", "return.back") == "Back to the shop"
    assert i18n.fill("{a} {b} {", {"a": 1, "b": "{a}"}) == "1 {a} {"  # filled once, no format
    with pytest.raises(KeyError):
        i18n.say("en", "handoff.redirect")  # a placeholder left unfilled is a bug, not a brace
