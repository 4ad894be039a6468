"""The escapers of text that a page did not write itself (a run file's names, versions, errors):
the one place that makes such text safe in Markdown (and the HTML it may hold), LaTeX and
matplotlib's mathtext (issue 71, item 3). Text a page writes itself (its numbers, its own words)
is not escaped.

- :func:`clean`: control, format and bidirectional characters removed, every line break a space;
- :func:`md`: Markdown text (a table cell too): ``<``, ``>`` and ``&`` as HTML entities, ``|``
  escaped, no link, image, autolink, emphasis, code span or heading;
- :func:`md_code`: a Markdown code span holding the text as it is;
- :func:`tex`: LaTeX text, its special characters escaped;
- :func:`mathtext`: a matplotlib label: ``$`` (mathtext) escaped.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["clean", "md", "md_code", "tex", "mathtext"]

_BREAKS = re.compile(r"[\r\n\u2028\u2029\x0b\x0c\x85]+")
_MD = {"\\": "\\\\", "`": "\\`", "*": "\\*", "~": "\\~", "|": "\\|",
       "&": "&amp;", "<": "&lt;", ">": "&gt;"}
#: ``_`` opens or closes emphasis only beside a character that is not a letter or digit
_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
#: what makes a link or an image: ``](`` (``[x](url)``, ``![x](url)``), ``][`` and ``]:`` (a
#: reference), and what GitHub turns into a link by itself: ``scheme://`` and ``www.``
_LINK = re.compile(r"\](?=[(\[:])|(?<=[A-Za-z0-9]):(?=//)|(?<=\bwww)\.", re.IGNORECASE)
_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
        "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}"}


def clean(text) -> str:
    """``text`` as one line of visible characters, stripped: line breaks (and runs of them) a space; C0 and
    C1 controls, format characters (the bidirectional marks, embeddings, overrides and isolates,
    zero-width characters) and unassigned or private code points removed."""
    text = _BREAKS.sub(" ", str(text)).replace("\t", " ")
    return "".join(ch for ch in text if unicodedata.category(ch) not in ("Cc", "Cf", "Cn", "Co", "Cs")).strip()


def md(text) -> str:
    """``text`` (:func:`clean`) as literal Markdown text, safe in a table cell: HTML's ``<``,
    ``>`` and ``&`` as entities, ``|``, ``\\``, `````, ``*``, ``~`` and an emphasis ``_``
    backslash-escaped, the ``]`` of a link or image, ``://`` and ``www.`` broken so that nothing
    becomes a link (a bracket that makes none stays as it is), a leading ``#`` escaped (no
    heading)."""
    text = _UNDERSCORE.sub(r"\\_", "".join(_MD.get(ch, ch) for ch in clean(text)))
    text = _LINK.sub(lambda m: "\\" + m.group(0), text)
    return "\\" + text if text.startswith("#") else text


def md_code(text) -> str:
    """``text`` (:func:`clean`) as a Markdown code span, fenced by more backticks than it holds,
    ``|`` escaped (a table cell splits on it even in a code span)."""
    text = clean(text)
    run = max((len(m) for m in re.findall("`+", text)), default=0)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    fence = "`" * (run + 1)
    return f"{fence}{pad}{text.replace('|', chr(92) + '|')}{pad}{fence}"


def tex(text) -> str:
    """``text`` (:func:`clean`) as LaTeX text: ``\\ & % $ # _ { } ~ ^ < > |`` escaped."""
    return "".join(_TEX.get(ch, ch) for ch in clean(text))


def mathtext(text) -> str:
    """``text`` (:func:`clean`) as a matplotlib label: ``$`` escaped, so no mathtext is parsed."""
    return clean(text).replace("$", r"\$")
