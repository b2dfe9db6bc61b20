"""The words the node says to buyers, in each of its languages (CONTRACT 4.1).

One catalogue per part of the node and language: ``edge/i18n/<part>/<lang>.json``, a flat JSON
object of keys to texts, with ``{name}`` placeholders filled in by ``say``. English is the
reference: every language has exactly its keys and, per key, its placeholders
(tests/test_i18n_catalogues.py). A part is a directory: ``buyer`` (the button's payment window,
the return pages), ``pay`` (the payment-link page), and any added later.

``words(lang)`` merges every part for one language; an unknown language is English. The files
ship with the package (pyproject's package-data, the binary's ``--collect-data edge``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from types import MappingProxyType

from edge.domain.language import DEFAULT, LANGUAGES

ROOT = Path(__file__).resolve().parent
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def parts() -> tuple[str, ...]:
    """The catalogue parts there are: the directories under ``edge/i18n``, sorted."""
    return tuple(
        sorted(p.name for p in ROOT.iterdir() if p.is_dir() and (p / f"{DEFAULT}.json").is_file())
    )


@cache
def part(name: str, lang: str) -> Mapping[str, str]:
    """One part's catalogue in ``lang`` (English for a language the node does not speak), read
    once."""
    lang = lang if lang in LANGUAGES else DEFAULT
    path = ROOT / name / f"{lang}.json"
    loaded = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(loaded, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in loaded.items()
    ):
        raise ValueError(f"{path}: a catalogue is a flat object of strings")
    return MappingProxyType(loaded)


@cache
def words(lang: str) -> Mapping[str, str]:
    """Every part's words in ``lang`` merged (English for a language the node does not speak);
    a key English has and ``lang`` lacks is said in English."""
    merged: dict[str, str] = {}
    for name in parts():
        merged.update(part(name, DEFAULT))
        merged.update(part(name, lang))
    return MappingProxyType(merged)


def say(lang: str, key: str, **params: object) -> str:
    """The text of ``key`` in ``lang`` with its ``{placeholders}`` filled from ``params`` (each
    one the text names must be given; a KeyError for an unknown key)."""
    return fill(words(lang)[key], params)


def fill(template: str, params: Mapping[str, object]) -> str:
    """``template`` with each ``{name}`` replaced by ``str(params[name])``; nothing else in it is
    read as a format (a brace that names nothing stays as it is)."""
    return PLACEHOLDER.sub(lambda m: str(params[m.group(1)]), template)


def placeholders(template: str) -> frozenset[str]:
    """The names of the ``{placeholders}`` in ``template``."""
    return frozenset(PLACEHOLDER.findall(template))
