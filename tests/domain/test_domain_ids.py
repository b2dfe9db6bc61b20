import hashlib
import itertools
import random
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edge.domain import ids
from edge.domain.errors import InvalidInput
from edge.domain.ids import (
    CROCKFORD,
    UlidFactory,
    api_key_mode,
    hash_api_key,
    is_evt_id,
    is_key_id,
    is_product_id,
    is_project_id,
    is_sub_id,
    is_tx_id,
    new_api_key,
    new_evt_id,
    new_key_id,
    new_project_id,
    new_reference_code,
    new_sub_id,
    new_tx_id,
    new_ulid,
    normalize_reference_code,
    ulid_floor,
    ulid_time_ms,
)

T = 1795254480000


def seq_bits(*values):
    it = iter(values)
    return lambda n: next(it)


# --- ULID -------------------------------------------------------------------


@given(st.integers(1, 2**48 - 2), st.integers(0, 2**80 - 1))
def test_ulid_floor_parts_the_ids_made_before_a_moment_from_the_rest(ms, bits):
    at = UlidFactory(clock_ms=lambda: ms, randbits=lambda n: bits)()
    before = UlidFactory(clock_ms=lambda: ms - 1, randbits=lambda n: bits)()
    assert before < ulid_floor(ms) <= at and ulid_time_ms(ulid_floor(ms)) == ms


def test_ulid_floor_refuses_times_no_ulid_has():
    for ms in (-1, 2**48):
        with pytest.raises(ValueError):
            ulid_floor(ms)


def test_ulid_layout():
    u = UlidFactory(clock_ms=lambda: T, randbits=lambda n: 0)()
    assert len(u) == 26 and ulid_time_ms(u) == T
    assert u.endswith("0" * 16)
    top = UlidFactory(clock_ms=lambda: 2**48 - 1, randbits=lambda n: 2**n - 1)()
    assert top == "7" + "Z" * 25


def test_a_factory_follows_the_clock_it_is_given_and_never_goes_back():
    """A node in cluster mode makes ids by its store's time (edge.node): ahead of the
    machine's, ids jump to it; behind, they still sort after every id made before."""
    factory = UlidFactory(clock_ms=lambda: T, randbits=lambda n: 0)
    first = factory()
    factory.follow(lambda: T + 60_000)
    ahead = factory()
    assert ulid_time_ms(ahead) == T + 60_000
    factory.follow(lambda: T - 60_000)
    behind = factory()
    assert first < ahead < behind and ulid_time_ms(behind) == T + 60_000
    factory.follow(None)  # the wall clock again
    assert ulid_time_ms(factory()) > T + 60_000


def test_ulid_default_clock_is_now():
    import time

    before = time.time_ns() // 1_000_000
    u = new_ulid()
    after = time.time_ns() // 1_000_000
    assert before <= ulid_time_ms(u) <= after
    assert re.fullmatch(r"[0-7][0-9A-HJKMNP-TV-Z]{25}", u)


def test_ulid_monotonic_frozen_clock():
    f = UlidFactory(clock_ms=lambda: T, randbits=lambda n: 12345)
    out = [f() for _ in range(1000)]
    assert out == sorted(out) and len(set(out)) == 1000
    assert all(ulid_time_ms(u) == T for u in out)
    # Increment of the previous value, not a fresh draw.
    assert ids._decode(out[-1]) - ids._decode(out[0]) == 999


def test_ulid_monotonic_backwards_clock():
    clock = iter([T, T - 5, T - 1000, T, T + 1, T - 1]).__next__
    f = UlidFactory(clock_ms=clock, randbits=lambda n: 7)
    out = [f() for _ in range(6)]
    assert out == sorted(out) and len(set(out)) == 6
    assert [ulid_time_ms(u) for u in out] == [T, T, T, T, T + 1, T + 1]


def test_ulid_carry_into_time_on_random_overflow():
    f = UlidFactory(clock_ms=lambda: T, randbits=lambda n: 2**80 - 2)
    a, b, c = f(), f(), f()
    assert a < b < c
    assert ulid_time_ms(b) == T and ulid_time_ms(c) == T + 1
    assert c.endswith("0" * 16)


def test_ulid_new_ms_draws_fresh_random():
    ticks = iter([T, T + 1]).__next__
    f = UlidFactory(clock_ms=ticks, randbits=seq_bits(2**79, 3))
    a, b = f(), f()
    assert a < b and ids._decode(b) & (2**80 - 1) == 3


def test_ulid_exhaustion_and_bad_clock():
    f = UlidFactory(clock_ms=lambda: 2**48 - 1, randbits=lambda n: 2**n - 1)
    f()
    with pytest.raises(OverflowError):
        f()
    with pytest.raises(ValueError):
        UlidFactory(clock_ms=lambda: -1)()
    with pytest.raises(ValueError):
        UlidFactory(clock_ms=lambda: 2**48)()


def test_default_factory_monotonic():
    out = [new_ulid() for _ in range(2000)]
    assert out == sorted(out) and len(set(out)) == 2000


@pytest.mark.parametrize(
    "bad", ["", "8" + "0" * 25, "0" * 25, "0" * 27, "0" * 25 + "U", "0" * 25 + "a", 5]
)
def test_ulid_time_ms_rejects(bad):
    with pytest.raises(InvalidInput):
        ulid_time_ms(bad)


# --- prefixed ids -------------------------------------------------------------

PREFIXED = [
    (new_tx_id, is_tx_id, "tx_"),
    (new_sub_id, is_sub_id, "sub_"),
    (new_evt_id, is_evt_id, "evt_"),
    (new_key_id, is_key_id, "key_"),
]


@pytest.mark.parametrize("new,check,prefix", PREFIXED)
def test_prefixed_ids(new, check, prefix):
    a, b = new(), new()
    assert a.startswith(prefix) and len(a) == len(prefix) + 26
    assert check(a) and a < b
    ulid = a[len(prefix) :]
    for _, other, _p in PREFIXED:
        assert other(a) is (other is check)
    bad = [
        ulid, prefix + ulid.lower(), prefix + ulid[:-1], prefix + ulid + "0",
        prefix + "8" + ulid[1:], prefix + ulid[:-1] + "I", prefix + ulid[:-1] + "O",
        prefix + ulid + "\n", " " + a, prefix.upper() + ulid, None, 1, b"x", [a],
    ]  # fmt: skip
    for s in bad:
        assert not check(s), s


def test_project_ids():
    p = new_project_id()
    assert re.fullmatch(r"prj_[0-9a-hjkmnp-tv-z]{16}", p) and is_project_id(p)
    assert new_project_id(lambda n: 0) == "prj_" + "0" * 16
    assert new_project_id(lambda n: 2**80 - 1) == "prj_" + "z" * 16
    assert new_project_id() != new_project_id()
    for bad in ["prj_" + "0" * 15, "prj_" + "0" * 17, "prj_" + "Z" * 16, "prj_" + "u" * 16,
                "prj_" + "0" * 16 + "\n", "PRJ_" + "0" * 16, None, 0]:  # fmt: skip
        assert not is_project_id(bad)


def test_product_ids():
    for ok in ["pro-monthly", "a", "0", "a_b-c", "a" * 64, "9lives"]:
        assert is_product_id(ok), ok
    for bad in ["", "-a", "_a", "A", "pro monthly", "a" * 65, "a.b", "é", "a\n", None, 3]:
        assert not is_product_id(bad), bad


# --- reference codes ----------------------------------------------------------


def sample_codes(n=200):
    rnd = random.Random(7)
    return [new_reference_code(rnd.getrandbits) for _ in range(n)]


def test_reference_code_shape():
    for code in sample_codes():
        c32 = "[0-9A-HJKMNP-TV-Z]"
        assert re.fullmatch(rf"CM-{c32}{{4}}-{c32}{{4}}-{c32}", code)
        assert normalize_reference_code(code) == code
    assert new_reference_code() != new_reference_code()


def test_reference_code_what_people_write():
    code = new_reference_code(lambda n: ids._decode("7KQ29XMD"))
    assert code.startswith("CM-7KQ2-9XMD-")
    check = code[-1]
    for written in [
        code, code.lower(), "7KQ29XMD" + check, "cm 7kq2 9xmd " + check,
        "  CM-7KQ2-9XMD-" + check + "  ", "CM7KQ29XMD" + check, "7-K-Q-2-9-X-M-D-" + check,
        "cm-7kq2-\t9xmd-" + check,
    ]:  # fmt: skip
        assert normalize_reference_code(written) == code, written


def test_reference_code_aliases():
    code = new_reference_code(lambda n: ids._decode("01010101"))
    check = code[-1]
    for written in ["O1O1O1O1", "oIoLoiol", "0l0I0i01"]:
        assert normalize_reference_code(written + check) == code


@pytest.mark.parametrize(
    "bad",
    [
        None,
        5,
        "",
        "CM-",
        "CM-7KQ2-9XMD",
        "CM-7KQ2-9XMD-44",
        "CM-7KQ2-9XMU-4",
        "XX7KQ29XMD4",
        "CM-7KQ2-9XMD-4-5",
    ],  # fmt: skip
)
def test_reference_code_malformed(bad):
    assert normalize_reference_code(bad) is None


def test_reference_code_catches_every_substitution():
    for code in sample_codes(100):
        compact = code.replace("CM-", "").replace("-", "")
        for i, c in itertools.product(range(9), CROCKFORD):
            if c == compact[i]:
                continue
            typo = compact[:i] + c + compact[i + 1 :]
            assert normalize_reference_code(typo) is None, (code, typo)


def test_reference_code_catches_adjacent_transpositions():
    # Luhn mod N cannot see a swap of 0 and the last symbol (Z): both are
    # fixed points of doubling. Every other swap of distinct chars is caught.
    checked = 0
    for code in sample_codes(300):
        compact = code.replace("CM-", "").replace("-", "")
        for i in range(8):
            a, b = compact[i], compact[i + 1]
            if a == b or {a, b} == {"0", "Z"}:
                continue
            swapped = compact[:i] + b + a + compact[i + 2 :]
            assert normalize_reference_code(swapped) is None, (code, swapped)
            checked += 1
    assert checked > 2000


def test_reference_code_every_pair_of_symbols_transposed():
    # Exhaustive over symbol pairs at every adjacent position of a fixed frame,
    # including the pair (last data char, check char).
    base = "7KQ29XMD"
    checked = 0
    for i in range(8):
        for a, b in itertools.product(CROCKFORD, repeat=2):
            data = (base[:i] + a + b + base[i + 2 :])[:8]
            code = data + ids._ref_check_char(data)
            x, y = code[i], code[i + 1]
            assert normalize_reference_code(code) is not None
            if x == y or {x, y} == {"0", "Z"}:
                continue
            swapped = code[:i] + y + x + code[i + 2 :]
            assert normalize_reference_code(swapped) is None, (code, swapped)
            checked += 1
    assert checked > 7000


# --- API keys -----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["live", "test"])
def test_api_key(mode):
    k = new_api_key(mode)
    assert re.fullmatch(rf"cmk_{mode}_[0-9A-Za-z]{{32}}", k)
    assert api_key_mode(k) == mode
    assert new_api_key(mode) != k
    assert new_api_key(mode, lambda n: 0) == f"cmk_{mode}_" + "0" * 32
    assert new_api_key(mode, lambda n: n - 1) == f"cmk_{mode}_" + "z" * 32


@pytest.mark.parametrize("mode", ["", "LIVE", "prod", None])
def test_api_key_bad_mode(mode):
    with pytest.raises(ValueError):
        new_api_key(mode)


def test_api_key_mode_rejects():
    good = "cmk_live_" + "a" * 32
    assert api_key_mode(good) == "live"
    for bad in [good[:-1], good + "a", good + "\n", "cmk_prod_" + "a" * 32, "CMK_live_" + "a" * 32,
                "cmk_live_" + "a" * 31 + "-", "cmk_live_" + "a" * 31 + "é",
                "", None, 1, b"x"]:  # fmt: skip
        assert api_key_mode(bad) is None, bad


def test_hash_api_key():
    k = "cmk_test_" + "b" * 32
    assert hash_api_key(k) == hashlib.sha256(k.encode()).digest()
    assert len(hash_api_key(k)) == 32


def _digits_one_by_one(value: int, length: int) -> str:
    """Crockford digits as the definition reads: the last ``length`` base-32 digits."""
    out = ""
    for _ in range(length):
        value, digit = divmod(value, 32)
        out = CROCKFORD[digit] + out
    return out


@given(st.integers(0, 2**160 - 1), st.sampled_from([1, 7, 8, 9, 10, 16, 26, 32]))
def test_crockford_digits_are_the_last_base32_digits(value, length):
    assert ids._encode(value, length) == _digits_one_by_one(value, length)


@given(st.integers(1, 200))
def test_random_bits_stay_within_their_width(k):
    assert 0 <= ids._entropy.randbits(k) < 2**k


def test_random_bits_differ_from_id_to_id_and_span_pages():
    pool = ids._Entropy()
    drawn = [pool.randbits(80) for _ in range(3 * pool.PAGE // 10)]  # three pages of them
    assert len(set(drawn)) == len(drawn)
    assert max(drawn).bit_length() > 70  # the top bits are random too, not zero padding


def test_a_forked_child_draws_bits_of_its_own():
    import os

    pool = ids._Entropy()
    pool.randbits(80)  # a page is read: the child must not replay its rest
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.write(write, pool.randbits(80).to_bytes(10, "big"))
        os._exit(0)
    os.waitpid(pid, 0)
    child = int.from_bytes(os.read(read, 10), "big")
    os.close(read)
    os.close(write)
    assert child != pool.randbits(80)
