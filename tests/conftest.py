"""Shared fixtures: a tiny random decoder (llama, gemma3 or qwen2) with a tokenizer trained on the fly,
so that unit tests need no model file; the real packaged backbone for integration tests."""

from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
if os.environ.get("PYTEST_XDIST_WORKER"):  # the suite's workers (pytest -n 2) share the cores: one thread each,
    os.environ["OMP_NUM_THREADS"] = "1"  # the pages' kernels and the CLI's subprocesses included
    torch.set_num_threads(1)

# the suite's longest tests (pytest --durations), each started first on a worker: pytest-xdist's worksteal hands
# each of the n workers a contiguous share of the collection (len(pending) // workers left), and moves queued tests
# to an idle worker from the end of a queue; with the long tests dealt round-robin to the front of each share, the
# workers end together on short tests instead of one running a 2-4 minute test alone at the end
LONG_FIRST = (
    "tests/test_book.py::test_smoke_book_builds_offline_with_figures_and_typeset_math",
    "tests/test_book.py::test_two_lanes_split_a_pages_runs_and_the_page_completes",
    "tests/test_p3_converged.py::test_the_page_reads_seeds_curves_and_verdicts",
    "tests/test_embedder.py::test_embedders_on_smollm2_reproduce_committed_scores",
    "tests/test_book.py::test_smoke_pages_compute_their_own_results_from_a_store_that_lacks_them",
    "tests/test_embedfilter.py::test_sweep_scores_every_variant_from_one_encode_and_resumes",
    "tests/test_jupyter.py::test_a_page_runs_in_the_projects_kernel_through_a_jupyter_server",
    "tests/test_evaluate.py::test_harness_reproduces_published_minilm_scores_on_full_sts_sets",
    "tests/test_encode.py::test_packed_states_equal_the_padded_on_a_real_backbone",
    "tests/test_verdicts.py::test_the_tests_the_ledger_uses_are_calibrated_at_the_measured_spreads",
    "tests/test_autoregembed.py::test_objective_cost_measures_both_objectives_in_fresh_processes",
)


def pytest_collection_modifyitems(items):
    """Each worker's share of the collection starts with its round-robin part of :data:`LONG_FIRST` (in that
    order); the other tests keep their order. (Every worker collects, and computes the same order.)"""
    def rank(item) -> int:
        return next((i for i, prefix in enumerate(LONG_FIRST) if item.nodeid.startswith(prefix)), len(LONG_FIRST))

    long = sorted((item for item in items if rank(item) < len(LONG_FIRST)), key=rank)
    rest = [item for item in items if rank(item) == len(LONG_FIRST)]
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    ordered = []
    for worker in range(workers):
        share = (len(items) - len(ordered)) // (workers - worker)  # what worksteal sends this worker
        own = long[worker::workers]
        ordered += own + rest[:max(0, share - len(own))]
        rest = rest[max(0, share - len(own)):]
    items[:] = ordered + rest


CORPUS = [
    "A man is playing a guitar.", "A woman slices a tomato.", "The cat sat on the mat.",
    "Rain is expected tomorrow in the north.", "Stock markets fell sharply on Monday.",
    "This sentence : means in one word: Rewrite the following paragraph. The rewritten paragraph:",
    "Summarize the sentence in one word", "中文 测试 😀 emoji", "abcdefghijklmnopqrstuvwxyz 0123456789",
]


def tiny_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<pad>", "<bos>", "<eos>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>")


def tiny_backbone(arch: str = "llama", attention: str = "causal", seed: int = 0):
    from transformers import AutoModelForCausalLM, Gemma3TextConfig, LlamaConfig, Qwen2Config

    from repro.core.backbones import Backbone

    tokenizer = tiny_tokenizer()
    common = dict(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
                  tie_word_embeddings=True)
    config = {"llama": lambda: LlamaConfig(**common),
              "qwen2": lambda: Qwen2Config(**common),
              "gemma3": lambda: Gemma3TextConfig(**common, head_dim=8, sliding_window=512)}[arch]()
    config._attn_implementation = "sdpa"
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
    backbone = Backbone(name=f"tiny-{arch}", revision=f"seed{seed}", model=model, tokenizer=tokenizer)
    backbone.set_attention(attention)
    return backbone


@pytest.fixture
def tiny():
    return tiny_backbone("llama")


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path, monkeypatch):
    """Each test writes caches and results to its own folders (never the repository's results/)."""
    monkeypatch.setenv("REPRO_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("REPRO_STATES_DIR", str(tmp_path / "states"))
    monkeypatch.setenv("REPRO_RUNS_DIR", str(tmp_path / "runs"))
    # no disk cache of derived frames in this process, and none left behind by a page's check_page called here: a
    # test may patch what the ledger calls, which the cache's key cannot see (pages, in their own kernels, cache)
    monkeypatch.delenv("REPRO_LEDGER_CACHE", raising=False)
    from repro.core import encode

    encode.forget_recent()


@pytest.fixture(scope="session")
def smollm2():
    """The real packaged default backbone (converted once into the session's backbone cache)."""
    from repro.core.backbones import load_backbone

    return load_backbone("smollm2-135m")


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    """A tiny random llama saved as a model folder, loadable by name (also in subprocesses)."""
    folder = tmp_path_factory.mktemp("tiny-llama")
    backbone = tiny_backbone("llama")
    backbone.model.save_pretrained(folder)
    backbone.tokenizer.save_pretrained(folder)
    return str(folder)


def _site_state() -> dict:
    """book/'s built site and executed pages (what a reader built): every file's size and mtime."""
    from repro.book.build import BOOK_DIR

    files = [*(BOOK_DIR / "_build").rglob("*"), *BOOK_DIR.glob("*.ipynb")]
    return {str(p): (p.stat().st_size, p.stat().st_mtime) for p in files if p.is_file()}


@pytest.fixture(scope="session", autouse=True)
def _the_published_site_is_left_alone():
    """The suite never touches book/_build or book/*.ipynb: a reader who built the book and then ran the tests
    still reads their book (the smoke book builds in a folder of its own, tests/test_book.py)."""
    before = _site_state()
    yield
    changed = sorted(set(before.items()) ^ set(_site_state().items()))
    assert not changed, f"the test suite changed the published site: {[c[0] for c in changed][:5]}"


@pytest.fixture(scope="session")
def _committed_comparisons():
    """Every comparison row of the standard ledger on the committed store (current and superseded), built once per
    worker, or read from the pages' disk cache (repro.store.derived; keyed by the store, the code and the data): the
    ledger's build reads about 2,900 result files and takes 25-40 s, and several tests read the same committed
    ledger without changing any code it runs. A test that patches what the ledger calls builds its own, and
    tests/test_backbones.py checks a build of its own equals this."""
    from repro.crosspaper.ledger import all_comparisons
    from repro.store import derived
    from repro.store.paths import REPO_ROOT, cache_dir

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("REPRO_RESULTS_DIR", str(REPO_ROOT / "results"))
        patch.setenv(derived.ENV, str(cache_dir() / "derived"))  # as a page reads it: the other worker's build
        patch.setenv("REPRO_COMPUTE", "refuse")  # read only: a missing result fails, never computes or trains
        patch.setenv("REPRO_TRAINING", "refuse")
        return all_comparisons("standard")


@pytest.fixture
def committed_comparisons(_committed_comparisons):
    """The committed store's comparison rows (a copy: a test may change its frame)."""
    return _committed_comparisons.copy()


@pytest.fixture
def committed_ledger(_committed_comparisons):
    """``claims_ledger("standard")`` on the committed store, from the worker's one build (a copy):
    tests/test_backbones.py checks it equals a build of its own."""
    from repro.crosspaper.ledger import current

    return current(_committed_comparisons)
