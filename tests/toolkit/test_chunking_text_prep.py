"""toolkit.text_prep and toolkit.chunking: digit masking, tag removal, overlapping chunks."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.chunking import chunk_spans, default_stride, spread
from toolkit.text_prep import mask_digits, prepare_text, strip_tags


def test_digits_are_masked_with_one_keeping_length_and_format():
    text = "Call 0171-234 5678 on 12.05.1999 at 9:30, room ٣٤."
    masked = mask_digits(text)
    assert masked == "Call 1111-111 1111 on 11.11.1111 at 1:11, room 11."
    assert len(masked) == len(text)


def test_tags_are_removed_but_not_bare_angle_brackets():
    assert strip_tags("end.<nl>Next") == "end. Next"
    assert strip_tags("<new>Dear Sam,<br/>hi <a href='x.html'>link</a>") == " Dear Sam, hi  link "
    assert strip_tags("a < b and c > d, <3") == "a < b and c > d, <3"
    # tags go before digits are masked, so a tag with digits in its name goes too
    assert prepare_text("<addr1_FN> wrote 42") == "  wrote 11"


@pytest.mark.parametrize("length", [0, 1, 5, 10, 11, 19, 20, 21, 37, 100])
@pytest.mark.parametrize(("window", "stride"), [(10, 10), (10, 7), (10, 1), (3, 2)])
def test_chunk_spans_cover_every_token_with_full_overlapping_windows(length, window, stride):
    spans = chunk_spans(length, window, stride)
    covered = set()
    for a, b in spans:
        assert 0 <= a <= b <= length
        assert b - a == min(window, length)  # never a short tail chunk, unless the text is short
        covered.update(range(a, b))
    assert covered == set(range(length))
    assert spans[-1][1] == length
    starts = [a for a, _ in spans]
    assert starts == sorted(set(starts))
    assert all(b - a <= stride for a, b in zip(starts, starts[1:], strict=False))


def test_chunk_spans_rejects_gaps():
    with pytest.raises(ValueError):
        chunk_spans(50, 10, 11)
    assert default_stride(126) == 94


def test_spread_keeps_first_and_last():
    assert spread(5, None) == [0, 1, 2, 3, 4]
    assert spread(10, 3) == [0, 4, 9] or spread(10, 3) == [0, 5, 9]
    assert spread(3, 10) == [0, 1, 2]


def test_chunk_text_with_a_real_tokenizer_stays_within_max_tokens(tmp_path: Path):
    pytest.importorskip("transformers")
    from helpers.tiny_encoder import make_tiny_encoder
    from transformers import AutoTokenizer

    from toolkit.chunking import chunk_text, special_tokens

    folder = make_tiny_encoder(tmp_path / "enc")
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    prefix, suffix = special_tokens(tokenizer)
    assert (prefix, suffix) == ([tokenizer.cls_token_id], [tokenizer.sep_token_id])
    text = "the quick brown fox jumps over the lazy dog. " * 20
    body = tokenizer(text, add_special_tokens=False)["input_ids"]
    chunks = chunk_text(text, tokenizer, max_tokens=32, stride=20)
    assert len(chunks) > 2
    for chunk in chunks:
        assert len(chunk) == 32
        assert chunk[0] == tokenizer.cls_token_id and chunk[-1] == tokenizer.sep_token_id
    # consecutive chunks overlap by window - stride = 10 tokens; the last one ends the text
    assert chunks[0][1:-1] == body[:30]
    assert chunks[1][1:-1] == body[20:50]
    assert chunks[-1][1:-1] == body[-30:]
    assert len(chunk_text(text, tokenizer, max_tokens=32, stride=20, max_chunks=3)) == 3
    assert chunk_text("hi", tokenizer, max_tokens=32) == [
        [tokenizer.cls_token_id, *tokenizer("hi", add_special_tokens=False)["input_ids"], tokenizer.sep_token_id]
    ]
