"""MkDocs hook: render the Sphinx roles of numpydoc docstrings (``:class:`x```) as code.

mkdocstrings shows ``:class:`plcore.PLDataset``` as ``:class:`` followed by code; this keeps
only the code, and ``~a.b.C`` becomes ``C``, as Sphinx would show it. A reST literal-block
marker ("... the group ``plcore``::") loses its second colon.
"""

import re

_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|data|mod|exc|obj|const|term|ref):<code>(~?)([^<]*)</code>")


def _code(match: re.Match) -> str:
    tilde, target = match.groups()
    return f"<code>{target.rsplit('.', 1)[-1] if tilde else target}</code>"


def on_page_content(html, page, config, files):
    html = _ROLE.sub(_code, html)
    return html.replace("::</p>", ":</p>")  # reST's "paragraph::" before a literal block
