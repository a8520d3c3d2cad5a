"""The verdict engine: how a paper's statement is decided, in one room. The tests a comparison is judged by (over
tasks for deterministic methods, over training runs for trained ones; ``rule``), the margins and the power behind a
"no difference" (``margins``, declared per metric family with their reasons; ``rule``, ``run_units``; pairs of runs
that share an upstream model: ``paired_runs``), the claim rows every claims module returns (``rule.claim_row``,
``comparison``, ``seeds``), ranking (``ranking``), the multiplicity corrections (Benjamini–Hochberg over the ledger,
Holm within a statement: ``multiplicity``), the engine's simulated null rate and power (``calibration``) and the words
a verdict is said in (``rule``, ``wording``). It may import the core (the statistics primitives of
``repro.core.stats``, the per-unit data of ``repro.core.paired``) and the store; training, the papers and everything
above them import it, the core never does."""
