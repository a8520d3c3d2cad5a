"""sha256 over files, read in blocks (backbone checksums, data fingerprints)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterable


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
