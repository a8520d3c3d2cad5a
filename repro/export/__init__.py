"""Recipes outside the book: sentence-transformers modules (:mod:`repro.export.modules`) and the export of a recipe
as a sentence-transformers folder (:mod:`repro.export.folder`)."""
