"""Two processes (torchrun, gloo on CPU) encode bit-identically to one, with the same threads per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from tests.conftest import CORPUS

WORDS = " ".join(CORPUS).split()
SCRIPT = """
import json, sys
from pathlib import Path
import numpy as np, torch
torch.set_num_threads(1)
from repro.core.backbones import load_backbone
from repro.core.distributed import init_from_env
from repro.core.encode import EncodeConfig, encode
rank, size = init_from_env()
model, cache, out = sys.argv[1:4]
texts = json.loads(Path(sys.argv[4]).read_text())
states = encode(load_backbone(model), texts, EncodeConfig(prompt="echo"), cache_root=Path(cache), chunk_size=16,
                progress=False)
for pooling, array in states.items():
    np.save(f"{out}.{pooling}.rank{rank}.npy", array)
Path(f"{out}.rank{rank}.json").write_text(json.dumps({"size": size, "threads": torch.get_num_threads()}))
"""


def run(args: list[str], tmp_path: Path, processes: int) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK", "LOCAL_RANK")}
    env |= {"OMP_NUM_THREADS": "1", "REPRO_STATES_DIR": str(tmp_path / f"states{processes}")}
    launcher = [sys.executable] if processes == 1 else [sys.executable, "-m", "torch.distributed.run", "--standalone",
                                                        f"--nproc-per-node={processes}"]
    done = subprocess.run(launcher + args, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


def test_two_processes_encode_bit_identically_to_one(tiny_dir, tmp_path):
    texts = [" ".join(WORDS[i % len(WORDS): i % len(WORDS) + 1 + (7 * i) % 40]) for i in range(150)]
    texts += texts[:10] + [""]  # duplicates and an empty text
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    (tmp_path / "script.py").write_text(SCRIPT)
    for processes in (1, 2):
        run([str(tmp_path / "script.py"), tiny_dir, str(tmp_path / f"cache{processes}"), str(tmp_path / f"out{processes}"),
             str(tmp_path / "texts.json")], tmp_path, processes)
    infos = {(p, r): json.loads((tmp_path / f"out{p}.rank{r}.json").read_text()) for p, r in ((1, 0), (2, 0), (2, 1))}
    assert infos[(1, 0)] == {"size": 1, "threads": 1}
    assert infos[(2, 0)] == infos[(2, 1)] == {"size": 2, "threads": 1}  # a world of 2, each with 1 thread as above
    chunks = list((tmp_path / "cache2").rglob("*.mean.npy"))
    assert len(chunks) == -(-len(set(texts)) // 16) >= 2  # every chunk written once, by one of the ranks
    for pooling in ("last", "mean"):
        single = np.load(tmp_path / f"out1.{pooling}.rank0.npy")
        assert single.shape[1] == len(texts)
        for rank in (0, 1):  # every rank returns the full array, in input order, bit for bit
            assert np.array_equal(np.load(tmp_path / f"out2.{pooling}.rank{rank}.npy"), single)


def test_repro_encode_runs_under_torchrun(tiny_dir, tmp_path):
    """`repro encode` under torchrun (2 processes x 1 thread) writes what one process with one thread writes, bit for
    bit; both run as fresh processes, so no state of this test process (earlier tests) enters the comparison."""
    (tmp_path / "texts.txt").write_text("\n".join(CORPUS))
    for processes in (1, 2):
        run(["-m", "repro", "encode", "--recipe", f"{tiny_dir}/echo+edge/2", "--input", str(tmp_path / "texts.txt"),
             "--output", str(tmp_path / f"emb{processes}.npy")], tmp_path, processes)
    one, two = np.load(tmp_path / "emb1.npy"), np.load(tmp_path / "emb2.npy")
    assert one.shape[0] == len(CORPUS) and np.array_equal(one, two)
