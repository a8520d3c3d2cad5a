"""sha256 over files, read in blocks (backbone checksums, data fingerprints), and over a model's weights."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

_DIGESTS: dict[tuple, str] = {}  # this process's digests, by each file's path, size and modification time


def sha256_files(paths: Iterable[Path], with_names: bool = False) -> str:
    """Hex sha256 of the files' bytes in order (and of their names, when ``with_names``). Remembered within a
    process by each file's resolved path, size and modification time (ns): a page keying hundreds of stored
    results re-reads no data file, and a rewritten file is read again."""
    paths = [Path(p) for p in paths]
    stamp = (with_names, *((str(p.resolve()), s.st_size, s.st_mtime_ns) for p in paths for s in [p.stat()]))
    if stamp not in _DIGESTS:
        _DIGESTS[stamp] = _sha256(paths, with_names)
    return _DIGESTS[stamp]


def _sha256(paths: list[Path], with_names: bool) -> str:
    digest = hashlib.sha256()
    for path in paths:
        if with_names:
            digest.update(Path(path).name.encode())
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 22), b""):
                digest.update(block)
    return digest.hexdigest()


def params_hash(params: dict) -> str:
    """12 hex digits of sha256 over the JSON of ``params`` (sorted keys): result keys and run folder names."""
    return hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:12]


def weights_digest(model) -> str:
    """sha256 (16 hex digits) of a model's trained weights, its parameters with ``requires_grad`` (LoRA adapters
    and pooling head; AutoRegEmbed's encoder and compression tokens), by name: identifies which training
    produced a score."""
    digest = hashlib.sha256()
    for name, param in sorted(model.named_parameters()):
        if param.requires_grad:
            digest.update(name.encode())
            digest.update(param.detach().cpu().numpy().tobytes())
    return digest.hexdigest()[:16]
