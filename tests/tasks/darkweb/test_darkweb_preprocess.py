"""SYSML's pre-processing rules, each on real posts of ../shared/data/forum-posts (named by post id).

The real posts hold no PGP block (a college forum), so the PGP rules are tested on armor written
here in the RFC 4880 format, and the real data is checked to hold none.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.forum.preprocess import (
    IMAGE,
    LINK,
    PGP_ENCMSG,
    PGP_PUBKEY,
    PGP_SIGNATURE,
    QUOTE,
    clean_post,
    is_image_url,
    replace_pgp,
)
from tasks.forum.reader import read_forum_posts


@pytest.fixture(scope="module")
def real(forum_posts_file: Path) -> dict[str, str]:
    posts, _ = read_forum_posts(forum_posts_file)
    return {p.post_id: p.text for p in posts}


@pytest.fixture(scope="module")
def cleaned(real: dict[str, str]) -> dict[str, str]:
    return {post_id: clean_post(text) for post_id, text in real.items()}  # what the task's episodes hold


# (post id, expected cleaned text or its start) -- each a real post
CASES = [
    # Reddit quote at the start of a post; the reply after the blank line stays
    ("t1_c2g64v9", "[QUOTE]\n\nOther than the pool, what do you suggest?"),
    # a quote in the middle of a post
    ("t1_cnrl2nz", "Thanks for this. I've been on searches for non-faculty positions"),
    # an empty '>' line whose quoted paragraph follows (Reddit renders it inside the quote)
    ("t1_dmuysdi", "[QUOTE]\n\nThe problem is not that this lady doesn't have a good idea about grad school."),
    # a quoted line broken in two (lazy continuation)
    ("t1_dyqyaq2", "[QUOTE]\n\ni'm confused why you think that's what I'm saying"),
    # nested quotes ('>>' then '>') and a space before '>'
    ("t1_cnskqy8", "[QUOTE]\n\nThat's certainly true."),
    ("t1_fbi6ri3", "[QUOTE]\n\nYou answer your own question."),
    # images: markdown link to i.imgur (anchor text kept), bare .gif, imgur album
    ("t1_c6rtoga", "Don't go full Baltimore [IMAGE]."),
    ("t1_e5l6y3m", "[IMAGE]"),
    ("t3_b0p2n1", "Forget Olivia Jade"),
    # links: bare, www., markdown with anchor, markdown with parentheses inside the address
    ("t1_dflpswo", "found this pic of OP: [LINK]"),
    ("t1_flrknuj", "[LINK]\n\nAlso [LINK]"),
    ("t1_duvdshv", "For reference [LINK], when you too come to defend your MS."),
    ("t1_ggc4cnq", "No [LINK]"),
    # quote and link in one post
    ("t1_h3gl3ki", '[QUOTE]\n\nGoogle "two body problem in academia" [LINK] and you\'ll get plenty of answers.'),
]


@pytest.mark.parametrize(("post_id", "expected"), CASES)
def test_rules_on_real_posts(real: dict[str, str], post_id: str, expected: str):
    assert clean_post(real[post_id]).startswith(expected)


def test_real_quote_inside_a_post_and_a_multi_paragraph_quote(real: dict[str, str]):
    assert clean_post(real["t1_cnrl2nz"]).endswith("Also:\n\n[QUOTE]\n\nSeriously!?")
    # t1_dqdixua quotes several '>>' paragraphs separated by blank lines: one [QUOTE]
    assert clean_post(real["t1_dqdixua"]) == "I posted this here once before, but it bears repeating: \n\n[QUOTE]"


def test_real_image_album_and_markdown_wikipedia_link(real: dict[str, str]):
    assert "[IMAGE]\n\nL M A O" in clean_post(real["t3_b0p2n1"])  # https://imgur.com/a/xy52lvn
    assert clean_post(real["t1_gaq0dhv"]) == "This is fine. [IMAGE]"  # .jpg after a path with parentheses


def test_no_address_survives_in_the_real_posts_of_people(real: dict[str, str], cleaned: dict[str, str]):
    # bot posts (RemindMeBot, TotesMessenger) hold odd markdown; every other post loses all its addresses
    leftovers = [
        pid
        for pid, text in cleaned.items()
        if ("http://" in text or "https://" in text) and "bot" not in real[pid].lower()
    ]
    assert len(leftovers) <= 0.0005 * len(real), leftovers[:5]


def test_real_posts_hold_no_pgp_block(real: dict[str, str]):
    assert not [pid for pid, text in real.items() if "BEGIN PGP" in text.upper()]


KEY = """-----BEGIN PGP PUBLIC KEY BLOCK-----
Version: GnuPG v1

mQENBFQn7pwBCADVxk1F2YnKq0Z8n2kT7aH0lS9uW3pRz4FqJ0oXbq8cR3nL1mYe
=Xb3k
-----END PGP PUBLIC KEY BLOCK-----"""
SIGNED = """-----BEGIN PGP SIGNED MESSAGE-----
Hash: SHA256

Order shipped today, thanks all.
-----BEGIN PGP SIGNATURE-----

iQEcBAEBCAAGBQJUJ+6cAAoJEKq0Z8n2kT7aVJ0H/3xk
=q1Zs
-----END PGP SIGNATURE-----"""
MESSAGE = """-----BEGIN PGP MESSAGE-----

hQEMA8x2Ynq0Z8n2AQf/Vq3pRz4FqJ0oXbq8cR3nL1mYe
-----END PGP MESSAGE-----"""


def test_pgp_blocks():
    assert clean_post(f"my key:\n{KEY}\nmsg me") == f"my key:\n{PGP_PUBKEY}\nmsg me"
    assert clean_post(SIGNED) == f"Order shipped today, thanks all.\n{PGP_SIGNATURE}"
    assert clean_post(f"for you: {MESSAGE}") == f"for you: {PGP_ENCMSG}"
    # a key cut off by the forum (no END line) runs to the end of the post
    assert replace_pgp("key below\n" + KEY.split("=Xb3k")[0]) == f"key below\n{PGP_PUBKEY}"
    # mangled dashes, as forums print them
    assert replace_pgp("--- BEGIN PGP MESSAGE ---\nabc\n--- END PGP MESSAGE ---") == PGP_ENCMSG


def test_bbcode_quotes_images_links_and_onions():
    text = "[quote=bob]a [quote]b[/quote] c[/quote] agreed [img]http://x.org/a.png[/img] [url=http://x.org]here[/url]"
    assert clean_post(text) == f"{QUOTE} agreed {IMAGE} here {LINK}"
    assert clean_post("visit silkroadvb5piz3r.onion/index.php now") == f"visit {LINK} now"
    assert clean_post("see (https://example.org/a_(b)) ok") == f"see ({LINK}) ok"
    assert is_image_url("https://i.redd.it/abc") and not is_image_url("https://example.org/page.html")


def test_plain_text_is_unchanged_apart_from_outer_whitespace():
    text = "I think 3 > 2, and x->y is fine.\nNo quote here."
    assert clean_post("  " + text + "\n") == text
