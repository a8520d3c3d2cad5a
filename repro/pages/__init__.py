"""The page parameter tables: each page's parameters under each profile (``parameters``: smoke, standard, paper) and
what the paper profile runs at the papers' scale (``paper_profile``: backbones, MTEB task lists, GPU-hour estimates,
the official sources). A room above the three papers and below the cross-paper pages and the book, which both read
it: it may import the core, the store, training and the papers' packages, never the recipes, ``crosspaper`` or
``book``."""
