"""The book's machinery: the papermill build and its ``--dry-run`` (``build``), how a page looks (``notebook``,
``table_format``, ``page_layout``), the placeholder check, page costs and screenshots. The top room: it may import
anything below it (the page parameter tables are in ``repro.pages``); nothing but the CLI imports it.

Importing it keeps jsonschema from compiling its IRI grammars (:func:`without_iri_grammars`) in the processes that
read notebooks (the build, a page's kernel)."""

import sys


def without_iri_grammars() -> None:
    """nbformat (papermill's, myst-nb's glue's) imports jsonschema, which compiles 38 lark grammars (2-4 s a process)
    for its optional IRI format checks when ``rfc3987_syntax`` is installed; the book validates no IRI (nbformat
    checks no format), so a process that has not imported jsonschema yet goes without them."""
    if "jsonschema" not in sys.modules:
        sys.modules.setdefault("rfc3987_syntax", None)


without_iri_grammars()
