"""Others' text on the operator's terminal (edge.domain.terminal)."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from edge.domain.terminal import escaped, printable

HIDDEN = ("Cc", "Cf", "Zl", "Zp")


def test_escapes_are_shown_not_obeyed():
    assert printable("Shop\x1b[31mRED\x07") == "Shop\\x1b[31mRED\\x07"
    assert printable("a\nb\tc\r") == "a\\x0ab\\x09c\\x0d"
    assert printable("invoice\u202egpj.exe") == "invoice\\u202egpj.exe"  # right-to-left override
    assert printable("pay\u200bpal") == "pay\\u200bpal"  # zero-width space
    assert printable("\x9b2J") == "\\x9b2J"  # a C1 control sequence introducer
    assert printable("Café Ünïcode ✓ 東京") == "Café Ünïcode ✓ 東京"


def test_every_string_of_a_json_value_is_escaped_keys_too():
    value = {"name": "x\x1b", "items": [{"k\x00": "v\x7f", "n": 3, "ok": True, "none": None}]}
    assert escaped(value) == {
        "name": "x\\x1b",
        "items": [{"k\\x00": "v\\x7f", "n": 3, "ok": True, "none": None}],
    }


@given(st.text())
def test_no_hidden_character_survives(text):
    shown = printable(text)
    assert not any(unicodedata.category(ch) in HIDDEN for ch in shown)


@given(st.text(st.characters(exclude_categories=HIDDEN)))
def test_text_without_hidden_characters_is_unchanged(text):
    assert printable(text) == text
