"""AutoRegEmbed experiments: train-or-load both stages, score them with mteb, and the untrained baselines.

* Runs: :func:`repro.autoregembed.train.run_spec` through the run store (:func:`repro.store.runs.train_or_load`);
  folders ``runs/<backbone>-ar-<stage>-<hash>``, stage 2 trains (or finds) its stage 1 first; training records
  in ``results/autoreg_runs/``.
* :func:`scores.evaluate_autoreg`: per-task mteb scores (STS per-pair similarities kept) in ``results/autoreg_scores/``,
  keyed by the full configuration, the suite and the task. Retrieval documents use the passage prompt.
* :func:`baselines.evaluate_untrained`: the raw backbone (last token, mean; no prompt) and PromptEOL on the same
  tasks, in ``results/autoreg_untrained/``.

    python -m repro.autoregembed.experiments.cli --stage align --steps 100 --suite compact
"""
