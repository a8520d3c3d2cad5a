"""The contrastive objective on one training batch: the embeddings of its queries, positives and hard
negatives (one padding-free packed forward, or padded forwards), InfoNCE over cosine similarity, the loss of
every training step (:func:`batch_loss`, used by :func:`repro.training.contrastive.train`) and a plain optimizer
step for loops outside the run store (:func:`optimizer_step`: the benchmarks)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from repro.training.config import Collator, TrainConfig
from repro.training.packing import ROW_TOKENS, pack


def info_nce(queries: torch.Tensor, positives: torch.Tensor, negatives: torch.Tensor | None,
             temperature: float, negative_valid: torch.Tensor | None = None) -> torch.Tensor:
    """InfoNCE over cosine similarity: each query's positive against every positive and hard negative.
    ``negative_valid`` [n] (bool) marks the rows of ``negatives`` that exist (pairs without a hard negative
    in a mixed batch leave a placeholder row, never scored)."""
    docs = positives if negatives is None else torch.cat([positives, negatives])
    logits = queries @ docs.T / temperature
    if negatives is not None and negative_valid is not None and not bool(negative_valid.all()):
        keep = torch.cat([torch.ones(len(positives), dtype=torch.bool, device=logits.device),
                          negative_valid.to(logits.device)])
        logits = logits.masked_fill(~keep[None], float("-inf"))
    return F.cross_entropy(logits, torch.arange(len(queries), device=queries.device))


def batch_embeddings(model, collate: Collator, rows: list[dict], packing: bool, device, row_tokens: int = ROW_TOKENS):
    """Embeddings of a batch's queries, positives and hard negatives (rows without one get a zero placeholder),
    the mask of rows with a hard negative, and the real tokens embedded. ``packing``: one padding-free forward
    for every text of the batch; otherwise one padded forward for the queries and one for the documents."""
    has = torch.tensor([r.get("negative") is not None for r in rows], dtype=torch.bool)
    texts = ([r["query"] for r in rows], [r["positive"] for r in rows],
             [r["negative"] for r in rows if r.get("negative") is not None])
    n = len(rows)
    if packing:
        causal = getattr(model, "module", model).spec.attention == "causal"  # (DDP-wrapped or not)
        packed = pack([collate.tokenize(t).ids for t in texts[0] + texts[1] + texts[2]], collate.pad, causal,
                      row_tokens)
        embeddings = model(packed=packed.to(device))
        q, d, tokens = embeddings[:n], embeddings[n:], packed.tokens
    else:
        q_ids, q_mask = collate(texts[0])
        d_ids, d_mask = collate(texts[1] + texts[2])
        q, d = model(q_ids.to(device), q_mask.to(device)), model(d_ids.to(device), d_mask.to(device))
        tokens = int(q_mask.sum() + d_mask.sum())
    positives, negatives = d[:n], d[n:]
    if not bool(has.all()):
        placeholder = torch.zeros((n, d.shape[1]), dtype=d.dtype, device=d.device)
        negatives = placeholder.index_copy(0, has.nonzero()[:, 0].to(d.device), negatives)
    return q, positives, negatives, has.to(d.device), tokens


def batch_loss(model, collate: Collator, rows: list[dict], config: TrainConfig, device, gather=lambda t: t
               ) -> tuple[torch.Tensor, int]:
    """The InfoNCE loss of one batch of training rows (hard negatives if ``config.hard_negatives``) and the real
    tokens it embedded: every training step's loss. ``gather``: each process's embeddings gathered with their
    gradients, when several processes train (:func:`repro.training.distributed.gather_with_grad`)."""
    q, p, n, has, tokens = batch_embeddings(model, collate, rows, config.packing, device)
    negatives, valid = (gather(n), gather(has.float()).bool()) if config.hard_negatives else (None, None)
    return info_nce(gather(q), gather(p), negatives, config.temperature, valid), tokens


def optimizer_step(model, collate: Collator, rows: list[dict], config: TrainConfig, optimizer,
                   device="cpu") -> int:
    """One plain training step on ``rows`` outside the run loop (no accelerator, schedule or dev evaluation):
    :func:`batch_loss`, backward, ``optimizer``'s step. Returns the real tokens embedded. The benchmarks time
    this step; a custom training loop can call it."""
    loss, tokens = batch_loss(model, collate, rows, config, device)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return tokens
