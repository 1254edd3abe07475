"""Text preparation as the BERT-BiLSTM paper (Petropoulos, PAN 2023) does it: tags removed, every digit masked with '1'.

PAN 2020-2023 texts mark line breaks and anonymised spans with tags (`<nl>`, `<new>`, `<addr1_FN>`)
and e-mails carry HTML; those are corpus artefacts, not style, so they are removed. Digits are
masked with `1` one for one, so numbers keep their format and length ("12.05.1999" ->
"11.11.1111") while their values, which carry topic, are hidden.
"""

from __future__ import annotations

import re

# A tag: `<name ...>`, `</name>` or `<name/>`, where the name starts with a letter. Bare angle
# brackets ("a < b", "<3") are text and stay.
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9_:.-]*(?:\s[^<>]*)?/?>")
_DIGIT = re.compile(r"\d")

# Bump when the preparation changes: cached encoder features are keyed by it.
PREP_VERSION = "1"


def strip_tags(text: str) -> str:
    """Replace each tag (`<nl>`, `<new>`, HTML such as `<br/>`, `<a href="...">`) by one space.

    A space rather than nothing, because `<nl>` stands for a line break: "end.<nl>Next" must
    not become the one word "end.Next".
    """
    return _TAG.sub(" ", text)


def mask_digits(text: str) -> str:
    """Replace every digit (any script's, as `\\d` matches) by `1`, keeping the text's length."""
    return _DIGIT.sub("1", text)


def prepare_text(text: str) -> str:
    """Tags removed first (tag names may hold digits, `<addr1>`), then digits masked."""
    return mask_digits(strip_tags(text))
