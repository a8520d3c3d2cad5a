"""repro: replicate three papers on decoder-only LLMs as text-embedding models.

Small modules with one idea each: ``backbones`` (load a model), ``prompts`` (templates),
``encode`` (texts -> all-layer pooled states in one forward), ``tasks`` (offline MTEB tasks and
suites), ``evaluate`` (mteb over an encoder), ``results`` (the result store).
"""

__version__ = "0.1.0"
