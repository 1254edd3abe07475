"""The reduced character alphabet the language model reads (Bagnall 2015 maps text to a small alphabet).

Letters are folded to lower case with a marker before each capital, accents are dropped (NFKD), digits
collapse to one symbol, runs of white space to one space, curly quotes and dashes to their plain forms,
and every other character to one "rare" symbol. The alphabet has 44 symbols.
"""

from __future__ import annotations

import unicodedata

import numpy as np

CAPITAL = "^"
DIGIT = "7"
RARE = "#"
PUNCTUATION = ".,;:!?'\"-()&/*"
ALPHABET = "abcdefghijklmnopqrstuvwxyz " + PUNCTUATION + CAPITAL + DIGIT + RARE
INDEX = {symbol: i for i, symbol in enumerate(ALPHABET)}
_FOLD = {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-", "`": "'"}


def reduce_text(text: str) -> str:
    """The text in the reduced alphabet (see the module docstring)."""
    out: list[str] = []
    space = False
    for char in unicodedata.normalize("NFKD", text):
        if unicodedata.combining(char):
            continue
        if char.isspace():
            if not space and out:
                out.append(" ")
            space = True
            continue
        space = False
        char = _FOLD.get(char, char)
        if "A" <= char <= "Z":
            out.extend((CAPITAL, char.lower()))
        elif "a" <= char <= "z" or char in PUNCTUATION:
            out.append(char)
        elif char.isdigit():
            out.append(DIGIT)
        else:
            out.append(RARE)
    return "".join(out).rstrip(" ")


def encode(text: str, max_chars: int | None = None) -> np.ndarray:
    """Symbol indices (uint8) of the reduced text, cut to its first `max_chars` symbols where given."""
    reduced = reduce_text(text)
    if max_chars is not None:
        reduced = reduced[:max_chars]
    return np.fromiter((INDEX[c] for c in reduced), dtype=np.uint8, count=len(reduced))
