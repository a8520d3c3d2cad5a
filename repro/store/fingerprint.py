"""sha256 over files, read in blocks (backbone checksums, data fingerprints), and over a model's weights."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable, Iterable


def sha256_files(paths: Iterable[Path], with_names: bool = False) -> str:
    """Hex sha256 of the files' bytes in order (and of their names, when ``with_names``)."""
    digest = hashlib.sha256()
    for path in paths:
        if with_names:
            digest.update(Path(path).name.encode())
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 22), b""):
                digest.update(block)
    return digest.hexdigest()


def weights_digest(model, keep: Callable[[str, object], bool]) -> str:
    """sha256 (16 hex digits) of the parameters ``keep(name, param)`` selects, by name: identifies which
    training produced a score."""
    digest = hashlib.sha256()
    for name, param in sorted(model.named_parameters()):
        if keep(name, param):
            digest.update(name.encode())
            digest.update(param.detach().cpu().numpy().tobytes())
    return digest.hexdigest()[:16]
