"""SYSML's pre-processing of forum posts: quoted text, PGP blocks, links and images become tokens.

Rules, applied in this order (a later rule never sees what an earlier one replaced):

1. PGP armor (RFC 4880): a public key block -> `[PGP PUBKEY]`, a signature -> `[PGP SIGNATURE]`, an
   encrypted message -> `[PGP ENCMSG]`. The header of a clear-signed message (`BEGIN PGP SIGNED
   MESSAGE` and its `Hash:` line) is dropped: the signed text is the author's own. A block whose END
   line is missing (posts cut by the forum) runs to the end of the post.
2. Quotes -> `[QUOTE]`: BBCode `[quote]...[/quote]` (as on darkweb forums, nested too) and markdown
   block quotes (Reddit): a paragraph whose first line starts with `>` (or `&gt;`), including its
   lazy continuation lines, as Reddit renders it. Quote blocks separated only by blank lines become
   one `[QUOTE]`.
3. Images -> `[IMAGE]`: a link whose address is an image (file extension, or an image host such as
   i.imgur.com, i.redd.it), as a bare address, a markdown link or BBCode `[img]`. A markdown link
   keeps its anchor text, which the author wrote: `[Baltimore](http://i.imgur.com/x.jpg)` ->
   `Baltimore [IMAGE]`.
4. Links -> `[LINK]`: http(s) addresses, `www.` addresses and `.onion` addresses, bare, as markdown
   links (anchor text kept) or BBCode `[url]`.
"""

from __future__ import annotations

import re

from tasks.forum.records import IMAGE, LINK, PGP_ENCMSG, PGP_PUBKEY, PGP_SIGNATURE, QUOTE

# -- PGP -------------------------------------------------------------------------------------------


def _armor(kind: str) -> re.Pattern[str]:
    # forums mangle the five dashes and line breaks; accept 2+ dashes and any spacing
    begin = rf"-{{2,}}\s*BEGIN PGP {kind}\s*-{{2,}}"
    end = rf"(?:-{{2,}}\s*END PGP {kind}\s*-{{2,}}|\Z)"
    return re.compile(rf"{begin}.*?{end}", re.DOTALL | re.IGNORECASE)


_PGP_RULES = (
    (_armor("PUBLIC KEY BLOCK"), PGP_PUBKEY),
    (_armor("PRIVATE KEY BLOCK"), PGP_PUBKEY),  # never meant to be posted, but it happens; same token
    (_armor("SIGNATURE"), PGP_SIGNATURE),
    (_armor("MESSAGE"), PGP_ENCMSG),
)
_SIGNED_HEADER = re.compile(r"-{2,}\s*BEGIN PGP SIGNED MESSAGE\s*-{2,}\s*(?:Hash:[^\n]*\n)?", re.IGNORECASE)

# -- quotes ----------------------------------------------------------------------------------------

_BB_QUOTE = re.compile(r"\[quote(?:[=\s][^\]]*)?\](?:(?!\[quote[=\s\]]).)*?\[/quote\]", re.DOTALL | re.IGNORECASE)
_QUOTE_LINE = re.compile(r"^[ \t]{0,3}(?:>|&gt;)")
_SENTINEL = "\x00"
_QUOTE_RUN = re.compile(r"\[QUOTE\](?:\s*\[QUOTE\])+")

# -- images and links ------------------------------------------------------------------------------

_IMAGE_EXT = r"\.(?:jpe?g|png|gifv?|webp|bmp|tiff?)(?:[?#][^\s()\]]*)?"
_IMAGE_HOSTS = r"(?:i\.imgur\.com|m\.imgur\.com|imgur\.com|i\.redd\.it|preview\.redd\.it|i\.reddituploads\.com)"
# a markdown link target may hold one level of parentheses (wikipedia) and, rarely, spaces
_MD_TARGET = r"\(\s*((?:https?://|www\.|/[ru]/)[^()\s]*(?:\([^()\s]*\)[^()\s]*)*(?:[^()\n]*?))\s*\)"
_MD_LINK = re.compile(r"\[([^\[\]\n]*(?:\[[^\[\]\n]*\][^\[\]\n]*)*)\]" + _MD_TARGET)
_BB_IMG = re.compile(r"\[img(?:=[^\]]*)?\].*?\[/img\]", re.DOTALL | re.IGNORECASE)
_BB_URL_TEXT = re.compile(r"\[url=[^\]]*\](.*?)\[/url\]", re.DOTALL | re.IGNORECASE)
_BB_URL = re.compile(r"\[url\].*?\[/url\]", re.DOTALL | re.IGNORECASE)
_URL = re.compile(r"(?:https?://|(?<![\w./@-])www\.)[^\s<>\[\]\"']+", re.IGNORECASE)
_ONION = re.compile(r"\b[a-z2-7]{16,56}\.onion\b[^\s<>\[\]\"']*", re.IGNORECASE)
_IS_IMAGE = re.compile(rf"^(?:https?://)?(?:{_IMAGE_HOSTS}/|[^\s?#]*{_IMAGE_EXT}$)", re.IGNORECASE)
_TRAILING = ".,;:!?)"  # punctuation that ends a sentence, not the address
# cheap scans first: most posts hold no PGP block and no address, and the full rules are slow
_PGP_MARKS = ("PGP", "pgp", "Pgp")
_LINK_MARKS = ("http", "HTTP", "Http", "www.", "WWW.", ".onion", ".ONION", "[url", "[URL", "[img", "[IMG", "](/")


def is_image_url(url: str) -> bool:
    """Whether an address points at an image (by file extension or image host)."""
    return bool(_IS_IMAGE.match(url.strip()))


def replace_pgp(text: str) -> str:
    """PGP public keys, signatures and encrypted messages -> their tokens; signed-message headers dropped."""
    if not any(mark in text for mark in _PGP_MARKS):
        return text
    for pattern, token in _PGP_RULES:
        text = pattern.sub(token, text)
    return _SIGNED_HEADER.sub("", text)


def replace_quotes(text: str) -> str:
    """BBCode and markdown (`>`) quotes -> `[QUOTE]`; adjacent quote blocks merge."""
    previous = None
    while previous != text:  # innermost [quote] first; a sentinel, as "[QUOTE]" reads as an opening tag
        previous, text = text, _BB_QUOTE.sub(_SENTINEL, text)
    text = _replace_markdown_quotes(text.replace(_SENTINEL, QUOTE))
    return _QUOTE_RUN.sub(QUOTE, text)


def _replace_markdown_quotes(text: str) -> str:
    if ">" not in text and "&gt;" not in text:
        return text
    out: list[str] = []
    in_quote = False
    for line in text.split("\n"):
        if _QUOTE_LINE.match(line):
            if not in_quote:
                out.append(QUOTE)
            in_quote = True
        elif in_quote and line.strip():
            continue  # lazy continuation: Reddit renders it inside the quote
        else:
            in_quote = False
            out.append(line)
    return "\n".join(out)


def _split_trailing(url: str) -> tuple[str, str]:
    """Sentence punctuation glued to a bare address is not part of it (a ')' only when unbalanced)."""
    tail = ""
    while url and url[-1] in _TRAILING:
        if url[-1] == ")" and url.count("(") >= url.count(")"):
            break
        tail, url = url[-1] + tail, url[:-1]
    return url, tail


def replace_links_and_images(text: str) -> str:
    """Image addresses -> `[IMAGE]`, other addresses -> `[LINK]`; markdown anchor text is kept."""
    if not any(mark in text for mark in _LINK_MARKS):
        return text
    text = _BB_IMG.sub(IMAGE, text)
    text = _BB_URL_TEXT.sub(lambda m: _with_anchor(m.group(1), LINK), text)
    text = _BB_URL.sub(LINK, text)

    def markdown(match: re.Match[str]) -> str:
        token = IMAGE if is_image_url(match.group(2)) else LINK
        return _with_anchor(match.group(1), token)

    text = _MD_LINK.sub(markdown, text)

    def bare(match: re.Match[str]) -> str:
        url, tail = _split_trailing(match.group(0))
        return (IMAGE if is_image_url(url) else LINK) + tail

    text = _URL.sub(bare, text)
    return _ONION.sub(LINK, text)


def _with_anchor(anchor: str, token: str) -> str:
    anchor = anchor.strip()
    if not anchor or is_image_url(anchor) or _URL.fullmatch(anchor):
        return token  # the anchor is the address itself
    return f"{anchor} {token}"


def clean_post(text: str) -> str:
    """A post with SYSML's replacements applied (see the module docstring), stripped."""
    text = text.replace("\r\n", "\n")
    text = replace_pgp(text)
    text = replace_quotes(text)
    text = replace_links_and_images(text)
    return text.strip()
