"""The log masker (shipyard.common.masking): every form of a value is masked, whole or fed
in pieces, and output without a value goes out at once."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote, quote_plus

import pytest

from shipyard.common.masking import MASK, MIN_FORM, Masker, forms

VALUE = 's3cr3t/VALUE "quoted" + more=9f8e7d\\ü'


def stream(masker: Masker, *chunks: bytes) -> bytes:
    return b"".join(masker.feed(c) for c in chunks) + masker.flush()


def printed_forms(value: str) -> dict[str, bytes]:
    """The value as a program would print it, in each form the masker must catch."""
    raw = value.encode()
    return {
        "raw": raw,
        "base64": base64.b64encode(raw),
        "base64 unpadded": base64.b64encode(raw).rstrip(b"="),
        "urlsafe base64": base64.urlsafe_b64encode(raw),
        "quote": quote(value).encode(),
        "quote safe=''": quote(value, safe="").encode(),
        "quote_plus": quote_plus(value).encode(),
        "json": json.dumps({"k": value}).encode(),
        "json utf-8": json.dumps({"k": value}, ensure_ascii=False).encode(),
    }


@pytest.mark.parametrize("form", list(printed_forms(VALUE)))
def test_each_form_is_masked_in_a_line(form):
    printed = printed_forms(VALUE)[form]
    out = stream(Masker([VALUE]), b"before " + printed + b" after\n")
    assert out.startswith(b"before ") and out.endswith(b" after\n")
    assert MASK in out
    for text in printed_forms(VALUE).values():
        assert text not in out


@pytest.mark.parametrize("shift", [0, 1, 2, 3, 4, 5])
@pytest.mark.parametrize("encode", [base64.b64encode, base64.urlsafe_b64encode])
def test_base64_inside_longer_data_is_masked_at_every_alignment(shift, encode):
    raw = VALUE.encode()
    encoded = encode(b"x" * shift + raw + b"tail bytes")
    out = Masker([VALUE]).mask(encoded)
    assert MASK in out
    # What stays visible is at most a group of 4 on each side that mixes in other bytes.
    assert len(out) - len(MASK) <= len(encoded) - (len(raw) * 4 // 3 - 8)
    for offset in range(3):
        own = encode(bytes(offset) + raw)[4 if offset else 0 : (offset + len(raw)) // 3 * 4]
        assert own not in out


def test_a_value_split_across_writes_is_masked_at_every_split():
    line = f"token={VALUE}\n".encode()
    for cut in range(len(line) + 1):
        assert stream(Masker([VALUE]), line[:cut], line[cut:]) == b"token=" + MASK + b"\n"


def test_a_value_fed_byte_by_byte_is_masked():
    line = f"a {VALUE} b {json.dumps(VALUE)}\n".encode()
    out = stream(Masker([VALUE]), *(line[i : i + 1] for i in range(len(line))))
    assert out == b"a " + MASK + b' b "' + MASK + b'"\n'


def test_output_without_a_value_is_not_held_back():
    masker = Masker([VALUE])
    assert masker.feed(b"step 1 loss 0.5\n") == b"step 1 loss 0.5\n"
    assert masker.feed(b"no newline yet") == b"no newline yet"


def test_a_possible_start_of_a_value_is_held_until_it_is_told():
    masker = Masker([VALUE])
    assert masker.feed(b"x " + VALUE[:5].encode()) == b"x "
    assert masker.feed(b" is not it\n") == VALUE[:5].encode() + b" is not it\n"
    assert masker.feed(VALUE[:8].encode()) == b""
    assert masker.flush() == VALUE[:8].encode()  # the stream ended: a part is no value


def test_several_values_and_a_value_that_starts_another():
    short, long = "token-abc123", "token-abc123-and-more"
    out = stream(
        Masker([short, long]), f"{long} {short}\n".encode()[:15], f"{long} {short}\n".encode()[15:]
    )
    assert out == MASK + b" " + MASK + b"\n"


def test_a_value_is_masked_without_its_trailing_newline_too():
    out = Masker(["key-from-a-file\n"]).mask(b"key=key-from-a-file;")
    assert out == b"key=" + MASK + b";"


def test_short_forms_are_left_alone():
    assert all(len(f) >= MIN_FORM for f in forms("abcdefgh"))
    masker = Masker(["abc"])  # shorter than MIN_FORM: masking it would hide ordinary text
    assert not masker
    assert stream(masker, b"abc abc\n") == b"abc abc\n"


def test_no_values_pass_everything():
    masker = Masker([])
    assert masker.feed(b"anything") == b"anything"
    assert masker.mask(b"anything") == b"anything"
