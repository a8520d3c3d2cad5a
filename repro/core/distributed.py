"""Several processes, one job: torch.distributed as ``torchrun`` (or ``accelerate launch`` on GPUs) sets it up.

    torchrun --nproc-per-node 2 -m repro encode --recipe smollm2-135m/echo --input texts.txt --output emb.npy

:func:`init_from_env` joins the process group that the launcher describes in the environment (``WORLD_SIZE``,
``RANK``, ``MASTER_ADDR``...): gloo on CPU, nccl on GPUs (each rank on the GPU of its ``LOCAL_RANK``). Without a
launcher it does nothing and the job is one process. :func:`repro.core.encode.encode` splits the cache chunks it
still has to compute across the ranks; every rank returns the full array.

Note: ``accelerate launch --cpu`` was seen to start one process on this machine (DESIGN.md); use ``torchrun`` on
CPU.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist


def world() -> tuple[int, int]:
    """(rank, world size) of this process; (0, 1) outside a process group."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def init_from_env() -> tuple[int, int]:
    """Join the launcher's process group if ``WORLD_SIZE`` > 1 (once); returns (rank, world size)."""
    size = int(os.environ.get("WORLD_SIZE", "1"))
    if size > 1 and not dist.is_initialized():
        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
            dist.init_process_group("nccl")
        else:
            dist.init_process_group("gloo")
    return world()


def barrier() -> None:
    if world()[1] > 1:
        dist.barrier()
