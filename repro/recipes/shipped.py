"""The trained recipes' weights, shipped with the repository so that they work on a fresh machine.

Run folders (``runs/``) are not committed: a trained model exists only where it was trained. The headline Paper 1
runs are the exception: their LoRA adapter and pooling head (no backbone: that comes from the packaged GGUF) are
copied in float16 to ``weights/<backbone>-<method>/`` (``REPRO_WEIGHTS_DIR``), about 10 MB for model 1 and 20 MB
for model 5, with ``source.json`` naming the run they come from (configuration, seed, the digest of the fp32
weights its stored scores were computed with) and the digest of the float16 copy.

    python -m repro.recipes.shipped smollm2-135m p1-model1 --seed 1   # after training that run on this machine

Loading upcasts to float32 (the book's dtype on CPU), so a shipped recipe is the trained run rounded to float16
weights: its embeddings differ from the run's in the fourth digit, and its ``source.json`` says so.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from repro.pooling_attention.trained import converged_config
from repro.recipes.recipe import TRAINED_RECIPES, shipped_folder, weights_dir
from repro.store.atomic import atomic_dir
from repro.store.fingerprint import weights_digest
from repro.store.runs import ensure_trained
from repro.training.contrastive import load_trained, run_spec


def source(backbone: str, method: str) -> dict:
    return json.loads((shipped_folder(backbone, method) / "source.json").read_text())


def ship(backbone: str, method: str, seed: int) -> Path:
    """Copy the trained run of ``<backbone>/<method>`` at ``seed`` (trained on this machine) to the shipped weights,
    in float16 (written atomically)."""
    config = converged_config(backbone, TRAINED_RECIPES[method], seed)
    spec = run_spec(config, progress=False)
    if not spec.weights_here:
        raise FileNotFoundError(f"{spec.folder} holds no trained weights on this machine: train the run first "
                                f"(python -m repro.pooling_attention.trained --converged --backbone {backbone} "
                                f"--model {TRAINED_RECIPES[method]} --seed {seed})")
    folder, record = ensure_trained(spec)  # the stored record (the weights are there: nothing trains)
    final = folder / "final"
    fp32_digest = weights_digest(load_trained(final)[0])
    target = weights_dir() / f"{backbone}-{method}"
    with atomic_dir(target) as tmp:
        (tmp / "adapter").mkdir(parents=True)
        for name in ("adapter_config.json", "README.md"):
            if (final / "adapter" / name).is_file():
                shutil.copy(final / "adapter" / name, tmp / "adapter" / name)
        adapter = load_file(str(final / "adapter" / "adapter_model.safetensors"))
        save_file({k: v.half().contiguous() for k, v in adapter.items()}, str(tmp / "adapter" / "adapter_model.safetensors"))
        if (final / "head.pt").is_file():
            head = torch.load(final / "head.pt", map_location="cpu")
            torch.save({k: v.half() for k, v in head.items()}, tmp / "head.pt")
        shutil.copy(final / "train_config.json", tmp / "train_config.json")
        shipped_digest = weights_digest(load_trained(tmp)[0])
        summary = record.get("summary", {})
        (tmp / "source.json").write_text(json.dumps({
            "recipe": f"{backbone}/{method}", "model": TRAINED_RECIPES[method], "seed": seed, "run": folder.name,
            "train": config.identity(), "stored_dtype": "float16",
            "run_weights_digest": fp32_digest, "shipped_weights_digest": shipped_digest,
            "selected_step": summary.get("selected_step"), "selected_signal": summary.get("selected_signal"),
            "selected_examples_seen": summary.get("selected_examples_seen"),
        }, indent=2, sort_keys=True))
    return target


def main(argv=None):
    parser = argparse.ArgumentParser(description="Ship a trained recipe's adapter and head (float16) in weights/.")
    parser.add_argument("backbone")
    parser.add_argument("method", choices=sorted(TRAINED_RECIPES))
    parser.add_argument("--seed", type=int, required=True)
    args = parser.parse_args(argv)
    target = ship(args.backbone, args.method, args.seed)
    size = sum(f.stat().st_size for f in target.rglob("*") if f.is_file())
    print(f"{target}: {size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
