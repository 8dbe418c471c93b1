"""A MkDocs hook: math on every page, and a 404 page that works opened from disk.

* ``$…$`` and ``$$…$$`` become MathML (:mod:`markdown_math`) in the pages and, since mkdocstrings renders
  docstrings with the site's Markdown extensions, in the docstrings: registered before the plugins read
  the extensions;
* the 404 page is rendered for any depth, so MkDocs writes its links from the site's root (``/assets/…``),
  which a browser opening the site from disk (``file://``) cannot follow; it lies at the root, so the
  same links without the leading ``/`` are right.
"""

from __future__ import annotations

import re

from markdown_math import MathExtension  # this hook's folder is on sys.path
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority


@event_priority(100)
def on_config(config: MkDocsConfig) -> MkDocsConfig:
    config.markdown_extensions.append(MathExtension())
    return config


def on_post_template(output: str, template_name: str, config: MkDocsConfig) -> str:
    if template_name != "404.html":
        return output
    output = re.sub(r'(\s(?:href|src)=")/(?!/)', r"\1", output)
    return output.replace('"base": "/"', '"base": "."')
