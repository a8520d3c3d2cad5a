"""Where :mod:`repro.recipes.export_modules` lived before the user's library left the book: sentence-transformers
folders exported before the move name ``repro.book.export_modules.PromptedDecoder`` in their ``modules.json``, and
still load through this alias."""

from repro.recipes.export_modules import PromptedDecoder

__all__ = ["PromptedDecoder"]
