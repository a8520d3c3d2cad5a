"""The book's machinery: the papermill build and its ``--dry-run`` (``build``), how a page looks (``notebook``,
``table_format``, ``page_layout``), the placeholder check, page costs and screenshots. The top room: it may import
anything below it (the page parameter tables are in ``repro.pages``); nothing but the CLI imports it."""
