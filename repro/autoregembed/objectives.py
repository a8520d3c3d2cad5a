"""AutoRegEmbed's objectives: stage 1's reconstruction loss and stage 2's conditional-distribution alignment
(paper Eq. 2 and its variants), with the batches they act on."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F

from repro.autoregembed.config import AlignConfig
from repro.training.data import batch_indices

if TYPE_CHECKING:  # type hints only: the model dispatches to these objectives
    from repro.autoregembed.model import AutoRegModel, TextIds


def compression_loss(model: AutoRegModel, batch: dict) -> torch.Tensor:
    """Stage 1: token-mean cross-entropy of the frozen decoder reproducing the target from the memory (a batch of
    token-id lists, ``"inputs"`` and ``"targets"``: the padding-free packed path, the same loss and gradients)."""
    if "inputs" in batch:
        memory = model.packed_memory(batch["inputs"], batch["pad"])
        total = model.packed_target_log_probs(memory, batch["targets"], batch["pad"])
        return -total.sum() / sum(len(t) for t in batch["targets"])
    memory = model.memory(batch["ids"], batch["mask"])
    total = model.target_log_probs(memory, batch["target_ids"], batch["target_mask"])
    return -total.sum() / batch["target_mask"].sum()


def squash(x: torch.Tensor, how: str) -> torch.Tensor:
    return {"sigmoid": torch.sigmoid, "tanh": torch.tanh, "logsigmoid": F.logsigmoid}[how](x)


def divergence(p_log: torch.Tensor, q_log: torch.Tensor, mask: torch.Tensor, how: str) -> torch.Tensor:
    """Summed over target positions: KL(p || q) or JS(p, q) of next-token distributions (log inputs)."""
    if how == "kl":
        per = (p_log.exp() * (p_log - q_log)).sum(-1)
    else:
        m_log = torch.logaddexp(p_log, q_log) - np.log(2.0)
        per = 0.5 * (p_log.exp() * (p_log - m_log)).sum(-1) + 0.5 * (q_log.exp() * (q_log - m_log)).sum(-1)
    return (per * mask).sum(1)


# (target, source) log-probabilities each strategy needs; "q", "p", "n" = query, positive, negative
STRATEGY_TERMS = {
    0: [("p", "q"), ("n", "q"), ("p", "p")],
    1: [("q", "q"), ("q", "p"), ("q", "n")],
    2: [("p", "q"), ("n", "q"), ("p", "p"), ("q", "q"), ("q", "p")],
    3: [("p", "q"), ("n", "q"), ("p", "p"), ("n", "p")],
    4: [("p", "q"), ("n", "q"), ("p", "p"), ("n", "n"), ("p", "n")],
}


def reference_terms(strategy: int) -> list[tuple[str, str]]:
    """The (target, source) pairs whose reference log-probabilities S2 subtracts."""
    return {0: [("p", "q"), ("n", "q")], 1: [("q", "p"), ("q", "n")], 2: [("p", "q"), ("n", "q")],
            3: [("p", "q"), ("n", "q"), ("p", "p"), ("n", "p")],
            4: [("p", "q"), ("n", "q"), ("n", "n"), ("p", "n")]}[strategy]


def alignment_scores(lp: dict, ref: dict, config: AlignConfig, dist: Callable[[str, str, str], torch.Tensor]
                     ) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """S1 (``[B]``) and the list of S2 terms (each ``[B]``) of the configured strategy.

    ``lp[(target, source)]`` = summed log p(target | e_source); ``ref`` the same for the reference model;
    ``dist(target, source_a, source_b)`` = the KL/JS divergence variant of S1's distance.

    * 0 (the paper): anchor d+; S1 compares p(d+|e_q) with p(d+|e_d+); S2 = log-odds of d+ over d- given e_q.
    * 1: the query is the generation target: S1 compares p(q|e_q) with p(q|e_d+); S2 = log-odds of
      p(q|e_d+) over p(q|e_d-).
    * 2: both q and d+ as anchors: S1 = w * S1(d+) + (1 - w) * S1(q).
    * 3: an extra S2 term raising p(d+|e_d+) while lowering p(d-|e_d+).
    * 4: an extra S2 term raising p(d-|e_d-) while lowering p(d+|e_d-).
    """
    f, beta = config.squash, config.beta

    def s1(target: str, a: str, b: str) -> torch.Tensor:
        distance = (lp[(target, a)] - lp[(target, b)]).abs() if config.divergence == "logprob" \
            else dist(target, a, b)
        return -squash(beta * distance, f)

    def s2(better: tuple, worse: tuple) -> torch.Tensor:
        if config.reference_sign == "paper":
            margin = (lp[better] - ref[better]) - (lp[worse] - ref[worse])
        else:  # the official code: (chosen - rejected) + (ref_chosen - ref_rejected)
            margin = (lp[better] - lp[worse]) + (ref[better] - ref[worse])
        return -squash(beta * margin, f)

    if config.strategy == 1:
        return s1("q", "q", "p"), [s2(("q", "p"), ("q", "n"))]
    first = s1("p", "q", "p")
    negatives = [s2(("p", "q"), ("n", "q"))]
    if config.strategy == 2:
        first = config.anchor_weight * first + (1 - config.anchor_weight) * s1("q", "q", "p")
    elif config.strategy == 3:
        negatives.append(s2(("p", "p"), ("n", "p")))
    elif config.strategy == 4:
        negatives.append(s2(("n", "n"), ("p", "n")))
    return first, negatives


def alignment_loss_from_scores(s1: torch.Tensor, s2: list[torch.Tensor], temperature: float) -> torch.Tensor:
    """-log e^{S1/tau} / (e^{S1/tau} + sum_j e^{S2_j/tau}), averaged over the batch (B comparisons, not B^2)."""
    logits = torch.stack([s1, *s2], dim=1) / temperature
    return (torch.logsumexp(logits, dim=1) - logits[:, 0]).mean()


def stack_rows(pairs: list[tuple[torch.Tensor, torch.Tensor]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ``(ids, mask)`` batches stacked into one, padded to the widest."""
    width = max(ids.shape[1] for ids, _ in pairs)
    ids = torch.cat([F.pad(i, (0, width - i.shape[1]), value=pad) for i, _ in pairs])
    mask = torch.cat([F.pad(m, (0, width - m.shape[1]), value=0) for _, m in pairs])
    return ids, mask


def alignment_log_probs(model: AutoRegModel, batch: dict, terms: list[tuple[str, str]], full: bool,
                        fused: bool) -> tuple[dict, dict]:
    """Summed log p(target | memory of source) per row for every (target, source) term, and (``full``) the
    next-token log-distributions. ``fused``: ONE encoder call for every source and ONE decoder call for every
    term (rows stacked, right padding: the same values within float tolerance, tested); otherwise one call
    per source and per term."""
    sources = sorted({s for _, s in terms})
    n = batch["inputs"][sources[0]][0].shape[0]
    if fused:
        stacked = model.memory(*stack_rows([batch["inputs"][s] for s in sources], batch["pad"]))
        memories = {s: stacked[i * n:(i + 1) * n] for i, s in enumerate(sources)}
        ids, mask = stack_rows([batch["targets"][t] for t, _ in terms], batch["pad"])
        out = model.target_log_probs(torch.cat([memories[s] for _, s in terms]), ids, mask, full=full)
        parts = {term: out[i * n:(i + 1) * n] for i, term in enumerate(terms)}
        if not full:
            return parts, {}
        lp = {term: (parts[term].gather(-1, ids[i * n:(i + 1) * n].unsqueeze(-1)).squeeze(-1)
                     * mask[i * n:(i + 1) * n]).sum(1) for i, term in enumerate(terms)}
        return lp, {term: (parts[term], mask[i * n:(i + 1) * n]) for i, term in enumerate(terms)}
    memories = {s: model.memory(*batch["inputs"][s]) for s in sources}
    lp, dists = {}, {}
    for target, source in terms:
        ids, mask = batch["targets"][target]
        if not full:
            lp[(target, source)] = model.target_log_probs(memories[source], ids, mask)
        else:
            log_probs = model.target_log_probs(memories[source], ids, mask, full=True)
            lp[(target, source)] = (log_probs.gather(-1, ids.unsqueeze(-1)).squeeze(-1) * mask).sum(1)
            dists[(target, source)] = (log_probs, mask)
    return lp, dists


def alignment_loss(model: AutoRegModel, batch: dict) -> torch.Tensor:
    """Stage 2 on this process's triplets (see :func:`alignment_scores`)."""
    config: AlignConfig = batch["config"]
    lp, dists = alignment_log_probs(model, batch, STRATEGY_TERMS[config.strategy], config.divergence != "logprob",
                                    config.fused)

    def dist(target, a, b):
        (p_log, mask), (q_log, _) = dists[(target, a)], dists[(target, b)]
        return divergence(p_log, q_log, mask, config.divergence)

    s1, s2 = alignment_scores(lp, batch["reference"], config, dist)
    return alignment_loss_from_scores(s1, s2, config.temperature)


OBJECTIVES = {"compress": compression_loss, "align": alignment_loss}


# ------------------------------------------------------------------------------------------- batches

def sources_of(strategy: int) -> list[str]:
    return sorted({s for _, s in STRATEGY_TERMS[strategy]})


def align_batch(texts: TextIds, rows: list[dict], config: AlignConfig, device) -> dict:
    """Tensors for :func:`alignment_loss` (everything except the reference scores)."""
    names = {"q": "query", "p": "positive", "n": "negative"}
    sources = sources_of(config.strategy)
    targets_needed = sorted({t for t, _ in STRATEGY_TERMS[config.strategy]})
    inputs = {s: [t.to(device) for t in texts.pad_batch(
        [texts.stage2_input(r[names[s]], config.instruction) for r in rows])] for s in sources}
    targets = {t: [x.to(device) for x in texts.pad_batch([texts.target(r[names[t]]) for r in rows])]
               for t in targets_needed}
    tokens = sum(int(m.sum()) for _, m in inputs.values()) + sum(int(m.sum()) for _, m in targets.values())
    return {"objective": "align", "config": config, "sources": sources, "inputs": inputs, "targets": targets,
            "tokens": tokens, "pad": texts.pad}


@torch.no_grad()
def reference_scores(model: AutoRegModel, texts: TextIds, rows: list[dict], config: AlignConfig,
                     batch_size: int = 16) -> dict[tuple[str, str], torch.Tensor]:
    """Reference log-probabilities (the initial = stage-1 model) of the strategy's S2 terms, per row."""
    was = model.training
    model.eval()
    terms = reference_terms(config.strategy)
    out = {term: torch.zeros(len(rows)) for term in terms}
    device = model.compression.device
    with torch.no_grad():
        for start in range(0, len(rows), batch_size):
            chunk = rows[start:start + batch_size]
            batch = align_batch(texts, chunk, config, device)
            memories = {s: model.memory(*batch["inputs"][s]) for s in {s for _, s in terms}}
            for target, source in terms:
                out[(target, source)][start:start + len(chunk)] = model.target_log_probs(
                    memories[source], *batch["targets"][target]).cpu()
    model.train(was)
    return out


def seen_indices(n: int, config, steps: int | None = None) -> list[int]:
    """Every training row the run's first ``steps`` steps (default: all ``config.steps``) draw (batches are a
    function of seed and step)."""
    seen = set()
    for step in range(config.steps if steps is None else min(steps, config.steps)):
        seen.update(batch_indices(n, config.batch_size, step, config.seed))
    return sorted(seen)
