"""The book's machinery: the page parameter tables (``pages``, ``paper_profile``), the papermill build and its
``--dry-run`` (``build``), how a page looks (``notebook``, ``table_format``, ``page_layout``), the placeholder check, page
costs and screenshots. The top room: it may import anything below it; nothing but the CLI imports it (the cross-paper
pages' use of the page tables is a known exception, issue 55)."""
