"""repro: three papers on decoder-only LLMs as text-embedding models, replicated as a book.

The front door (imported on first use, so ``import repro`` stays light)::

    from repro import from_recipe
    embedder = from_recipe("qwen2.5-coder-0.5b/echo+edge/2")   # <backbone>/<method>[+<filter>]
    vectors = embedder.encode(["A man is playing a guitar."])   # float32 [n, d]

* ``Embedder``: the one encoding interface (``encode(texts, role=..., instruction=...)``);
* ``from_recipe``: a configuration of the book in one line (:mod:`repro.recipes.recipe`);
* ``load_backbone``, ``encode``, ``EncodeConfig``: every layer's pooled states in one forward (:mod:`repro.core`);
* ``export``: a recipe as a sentence-transformers folder (:mod:`repro.recipes.export`).

The packages, bottom up: ``store`` (results, runs, caches), ``core`` (backbones, encoding, tasks, evaluation,
statistics primitives), ``verdicts`` (the verdict engine), ``training``, the three papers (``pooling_attention``,
``embedfilter``, ``autoregembed``), ``pages`` (each page's parameters), ``recipes`` (the user's library),
``crosspaper`` (the paper registry, the leaderboard, the claims ledger, the combinations) and ``book`` (the machinery
that builds the site).
"""

from importlib import import_module

__version__ = "0.1.0"

_API = {"Embedder": "repro.core.embedder", "from_recipe": "repro.recipes.recipe",
        "load_backbone": "repro.core.backbones", "encode": "repro.core.encode", "EncodeConfig": "repro.core.encode",
        "export": "repro.recipes.export"}
__all__ = sorted(_API)


def __getattr__(name: str):
    if name not in _API:
        raise AttributeError(f"module 'repro' has no attribute {name!r}")
    return getattr(import_module(_API[name]), name)


def __dir__():
    return sorted(list(globals()) + __all__)
