"""The user's library: a recipe names a configuration of the book in one line (``repro.recipes.recipes``), the
shipped fp16 weights of the trained recipes (``shipped``), and their export to a sentence-transformers folder
(``export``, with its module ``export_modules.PromptedDecoder``). It builds on the core and the three papers and
never imports the book or the cross-paper pages."""
