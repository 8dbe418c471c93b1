"""A Python-Markdown extension: ``$…$`` and ``$$…$$`` into MathML, which a browser renders with no script.

Used by every page of the site and by the docstrings (mkdocstrings renders them with the same extensions).
``$$…$$`` is display math (it may span lines of one paragraph); ``$…$`` is inline math when it reads as
math: the opening ``$`` is followed by a non-space, the closing one preceded by a non-space and not followed
by a digit (so "costs $5 and $10" stays text). ``\\$`` is a literal dollar. Code spans and code blocks are
never touched: the code-span pattern runs first, and code blocks are not inline text.

A formula that ``latex2mathml`` cannot convert is a warning (a strict build fails) and shows as code.
"""

from __future__ import annotations

import logging
import re
import xml.etree.ElementTree as etree

from markdown import Extension, Markdown
from markdown.inlinepatterns import InlineProcessor

log = logging.getLogger("mkdocs.markdown_math")

DISPLAY = r"(?<![\\$])\$\$(?P<latex>.+?)(?<!\\)\$\$"
INLINE = r"(?<![\\$])\$(?=[^\s$])(?P<latex>(?:[^$\\]|\\.)+?)(?<=[^\s\\])\$(?![\d$])"
ESCAPED = r"\\\$"


def mathml(latex: str, display: bool) -> str | None:
    """``latex`` as a ``<math>`` element, or ``None`` where ``latex2mathml`` rejects it (or is not installed)."""
    try:
        from latex2mathml.converter import convert
    except ImportError:
        return None
    try:
        return str(convert(" ".join(latex.split()), display="block" if display else "inline"))
    except Exception:  # latex2mathml raises its own errors (and a few plain ones) on unknown commands
        return None


class MathProcessor(InlineProcessor):
    """One ``$…$`` or ``$$…$$`` span into MathML, stashed as raw HTML (later patterns leave it alone)."""

    def __init__(self, pattern: str, md: Markdown, display: bool) -> None:
        super().__init__(pattern, md)
        self.display = display
        self.compiled_re = re.compile(pattern, re.DOTALL)

    def handleMatch(self, m: re.Match[str], data: str) -> tuple[str | etree.Element, int, int]:
        latex = m.group("latex")
        out = mathml(latex, self.display)
        if out is None:
            log.warning("markdown_math: latex2mathml cannot convert %r (install the docs extra, or fix it)", latex)
            code = etree.Element("code")
            code.text = latex
            return code, m.start(0), m.end(0)
        return self.md.htmlStash.store(out), m.start(0), m.end(0)


class EscapedDollar(InlineProcessor):
    """``\\$``: a literal dollar, never the start of math."""

    def handleMatch(self, m: re.Match[str], data: str) -> tuple[str, int, int]:
        return "$", m.start(0), m.end(0)


class MathExtension(Extension):
    """Registers the math patterns after code spans (190) and before backslash escapes (180)."""

    def extendMarkdown(self, md: Markdown) -> None:
        md.inlinePatterns.register(EscapedDollar(ESCAPED, md), "math_escaped_dollar", 187)
        md.inlinePatterns.register(MathProcessor(DISPLAY, md, display=True), "math_display", 186)
        md.inlinePatterns.register(MathProcessor(INLINE, md, display=False), "math_inline", 185)
