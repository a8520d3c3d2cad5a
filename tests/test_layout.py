"""The library's shape: layers, no cycles, no cross-paper imports, small files, one of each concept,
and notebook defaults that equal what the book runs."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from repro.crosspaper.registry import papers

ROOT = Path(__file__).resolve().parent.parent
REPRO = ROOT / "repro"


# the papers' packages, from the registry: a fourth paper registers there and is held to the same rule
PAPERS = tuple(paper.package.split(".")[1] for paper in papers())
LAYERS = ("core", "store", "verdicts", "training", *PAPERS, "pages", "recipes", "crosspaper", "book")
# the page parameter tables, the user's library, the pages across papers, the machinery
ABOVE_PAPERS = ("pages", "recipes", "crosspaper", "book")


def modules() -> dict[str, Path]:
    return {".".join(p.with_suffix("").relative_to(ROOT).parts).removesuffix(".__init__"): p
            for p in REPRO.rglob("*.py")}


def runtime_imports(path: Path, typing: bool = False) -> set[str]:
    """repro modules imported at run time (not under ``if TYPE_CHECKING``), or with ``typing`` the ones imported
    for type hints only (under it)."""
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                   and getattr(node.test, "id", "") == "TYPE_CHECKING" for n in ast.walk(node)}
    return {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
            and (id(node) in typing_only) == typing and node.module and node.module.startswith("repro")}


# The type-hint imports allowed to close a cycle, each by name with its reason. The AutoRegEmbed model dispatches a
# batch to its objective in ``forward`` (so that one call, DDP-wrapped, is the loss and synchronises gradients), and
# the objectives call the model's methods: the objectives name the model's classes in their hints only.
ALLOWED_TYPING_CYCLES = {("repro.autoregembed.objectives", "repro.autoregembed.model")}


def test_type_hint_imports_close_no_cycle_but_the_named_ones():
    runtime = {name: runtime_imports(path) for name, path in modules().items()}
    typing = {(name, dep) for name, path in modules().items() for dep in runtime_imports(path, typing=True)}

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            name = todo.pop()
            if name == goal:
                return True
            if name not in seen:
                seen.add(name)
                todo += runtime.get(name, ())
        return False

    cycles = {(name, dep) for name, dep in typing if reaches(dep, name)}  # name -hint-> dep -runtime-> ... -> name
    assert cycles == ALLOWED_TYPING_CYCLES, f"type-hint imports that close a cycle: {sorted(cycles)}"


def test_the_top_level_reads_as_core_store_verdicts_training_three_papers_pages_recipes_crosspaper_and_book():
    packages = sorted(p.name for p in REPRO.iterdir() if p.is_dir() and (p / "__init__.py").is_file())
    assert packages == sorted(LAYERS)
    assert sorted(p.name for p in REPRO.glob("*.py")) == ["__init__.py", "__main__.py", "cli.py"]


def test_no_import_cycles_and_no_paper_imports_another():
    graph = {name: runtime_imports(path) for name, path in modules().items()}
    state: dict[str, int] = {}

    def visit(name, stack):
        if state.get(name) == 1:
            pytest.fail("import cycle: " + " -> ".join(stack[stack.index(name):] + [name]))
        if state.get(name) == 2:
            return
        state[name] = 1
        for dep in graph.get(name, ()):
            visit(dep, stack + [name])
        state[name] = 2

    for name in graph:
        visit(name, [])
    for name, deps in graph.items():
        layer = name.split(".")[1] if "." in name else ""
        if layer in PAPERS:
            others = {d for d in deps if d.split(".")[1] in PAPERS and d.split(".")[1] != layer}
            assert not others, f"{name} (a paper) imports another paper: {sorted(others)}"
            above = {d for d in deps if d.split(".")[1] in ABOVE_PAPERS}
            assert not above, f"{name} (a paper) imports the recipes, the cross-paper pages or the book: {sorted(above)}"
        if layer in ("core", "store", "verdicts", "training"):
            above = {d for d in deps if d.split(".")[1] in (*PAPERS, *ABOVE_PAPERS)}
            assert not above, f"{name} ({layer}) imports a paper or what builds on them: {sorted(above)}"
        if layer in ("core", "store"):  # the verdict engine builds on the core's statistics, never the other way
            engine = {d for d in deps if d.split(".")[1] in ("verdicts", "training")}
            assert not engine, f"{name} ({layer}) imports the verdict engine or training: {sorted(engine)}"
        if layer == "verdicts":
            above = {d for d in deps if d.split(".")[1] == "training"}
            assert not above, f"{name} (the verdict engine) imports training: {sorted(above)}"
        if layer in ("pages", "recipes"):
            above = {d for d in deps if d.split(".")[1] in ("pages", "recipes", "crosspaper", "book")
                     and d.split(".")[1] != layer}
            assert not above, f"{name} ({layer}) imports the recipes, the page tables, the cross-paper pages or the " \
                              f"book: {sorted(above)}"
        if layer == "crosspaper":
            above = {d for d in deps if d.split(".")[1] == "book"}
            assert not above, f"{name} (the cross-paper pages) imports the book's machinery: {sorted(above)}"


# The library modules imported inside a function, each by name with its reason: what only some recipes need is
# imported when one is built, so that the front door (``from repro import from_recipe``) stays light (tested below).
DEFERRED_REPRO = {
    ("repro.recipes.recipe", "_trained"): {"repro.autoregembed.experiments.scores", "repro.training.contrastive"},
    ("repro.embedfilter.filters", "filters_for"): {"repro.core.samples"},  # whitening's NLI sentences
    ("repro.core.backbones", "converted_folder"): {"repro.store.lanes"},  # the conversion's lock, only when converting
}


def test_the_front_door_imports_fewer_than_20_library_modules():
    code = ("import sys; from repro import from_recipe; "
            "print(sorted(m for m in sys.modules if m == 'repro' or m.startswith('repro.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    loaded = eval(out)  # a printed list of names
    assert len(loaded) < 20, loaded
    assert not {m for m in loaded if m.split(".")[1:2] and m.split(".")[1] in ("training", "pooling_attention",
                                                                                "autoregembed", "crosspaper", "book")}


def test_no_library_file_over_400_lines_and_imports_at_module_top():
    for name, path in modules().items():
        assert len(path.read_text().splitlines()) <= 400, name
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = [n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))]
                # the exceptions: fcntl, inside the try that handles its absence (no flock on Windows), and the
                # training and evaluation stack, imported where it is used so that a page reading stored results
                # never pays for it (~6 s per page; tests/test_book.py checks every page's imports)
                deferred = {"mteb", "peft", "accelerate", "transformers", "datasets", "sentence_transformers",
                            "torch.distributed.nn.functional"}
                names = {n.names[0].name if isinstance(n, ast.Import) else n.module for n in inner}
                odd = {n for n in names if n != "fcntl" and n not in deferred and n.split(".")[0] not in deferred}
                assert odd == DEFERRED_REPRO.get((name, node.name), set()), (name, node.name, odd)


def _calls(pattern: str) -> list[str]:
    out = subprocess.run(["grep", "-rn", "--include=*.py", pattern, str(REPRO)], capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if line.strip()]


def test_each_concept_exists_once():
    assert len(_calls(r"\.remove_quantization_config(")) == 1
    assert len(_calls(r"LoraConfig(")) == 1
    assert len(_calls(r"def train_or_load(")) == 1
    assert len(_calls(r"def weights_digest(")) == 1
    assert len(_calls(r"def runs_dir(")) == 1
    assert len(_calls(r"exclusive(f\"run ")) == 1  # one lock site for trained runs
    assert len(_calls(r"(CosineSimilarity):")) == 1  # one mteb adapter


def test_importing_the_library_sets_no_environment_variable():
    code = ("import os, pkgutil, importlib, repro; before = dict(os.environ)\n"
            "for m in pkgutil.walk_packages(repro.__path__, 'repro.'):\n"
            "    if not m.name.endswith('__main__'): importlib.import_module(m.name)\n"
            "changed = {k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k)}\n"
            "print(sorted(changed))")
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    changed = eval(out.stdout.strip().splitlines()[-1])
    assert not [k for k in changed if k.startswith(("HF_", "REPRO_", "TOKENIZERS", "OMP", "MKL"))], changed


def test_every_notebook_default_equals_what_the_book_runs():
    sys.path.insert(0, str(ROOT / "scripts"))
    sync = importlib.import_module("sync_notebook_parameters")
    from repro.pages.parameters import NOTEBOOKS

    assert {name: diff for name in NOTEBOOKS if (diff := sync.differences(name))} == {}


def test_every_notebook_cell_parses_and_its_repro_imports_resolve():
    import json

    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] != "code":
                continue
            tree = ast.parse("".join(cell["source"]))  # a SyntaxError names the notebook in the traceback
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("repro"):
                    module = importlib.import_module(node.module)
                    missing = [a.name for a in node.names if not hasattr(module, a.name)
                               and importlib.util.find_spec(f"{node.module}.{a.name}") is None]  # or a submodule
                    assert not missing, (path.name, node.module, missing)


def test_no_notebook_drops_a_table_inside_a_block():
    """A frame computed as a bare expression inside an if/for/with block is never shown (only a cell's last
    top-level expression is): such a call to a library function that returns a value must be wrapped in display()
    (drawing functions, which return their artists, aside)."""
    import inspect
    import json

    draws = {"label_points"}  # returns the annotations it drew
    dropped = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        imported = {}
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] != "code":
                continue
            tree = ast.parse("".join(cell["source"]))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("repro"):
                    module = importlib.import_module(node.module)
                    imported |= {a.asname or a.name: getattr(module, a.name, None) for a in node.names}
            for top in tree.body:
                if not isinstance(top, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
                    continue
                for node in ast.walk(top):
                    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
                            and isinstance(node.value.func, ast.Name) and callable(imported.get(node.value.func.id)) \
                            and node.value.func.id not in draws:
                        returns = inspect.signature(imported[node.value.func.id]).return_annotation
                        if returns not in (inspect.Signature.empty, None, "None"):
                            dropped.append((path.name, ast.unparse(node.value)[:80]))
    assert not dropped, dropped


def test_committed_training_records_keep_their_keys_after_the_move():
    """The configs the book's Paper 1 pages build still find their committed training records and scores (a
    refactor never changes a result key)."""
    from repro.pages.parameters import NOTEBOOKS
    from repro.store.results import result_path
    from repro.training.contrastive import RUNS_EXPERIMENT, TrainConfig
    from repro.training.evaluation import SCORES_EXPERIMENT

    found = 0
    for page, backbone_key in (("p1_tables", "backbones"), ("p1_robustness", "backbone")):
        p = NOTEBOOKS[page]["standard"]
        backbones = p[backbone_key] if isinstance(p[backbone_key], list) else [p[backbone_key]]
        for backbone in backbones:
            for model in p["models"]:
                config = TrainConfig(backbone=backbone, model=model, steps=p["steps"], batch_size=p["batch_size"],
                                     max_length=p["max_length"], validation_sts_pairs=p["validation_sts_pairs"],
                                     validation_triplets=p["validation_triplets"], seed=p["seed"])
                record = result_path(RUNS_EXPERIMENT, {"train": config.identity()})
                committed = ROOT / "results" / RUNS_EXPERIMENT / record.name
                assert committed.is_file(), (page, backbone, model)
                scores = list((ROOT / "results" / SCORES_EXPERIMENT).glob("*.json"))
                key = {"train": config.identity(), "eval_max_length": 512}
                assert any(json_params(f, key) for f in scores), (page, backbone, model)
                found += 1
    assert found == 10


def json_params(path: Path, key: dict) -> bool:
    import json

    params = json.loads(path.read_text())["params"]
    return all(params.get(k) == v for k, v in key.items())


def test_the_repro_command_lists_its_commands_and_refuses_unknown_ones():
    ok = subprocess.run([sys.executable, "-m", "repro", "--help"], capture_output=True, text=True, cwd=ROOT)
    assert ok.returncode == 0 and "build" in ok.stdout and "autoreg" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "repro", "nope"], capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode != 0 and "unknown command 'nope'" in bad.stderr and "build" in bad.stderr
    sub = subprocess.run([sys.executable, "-m", "repro", "train", "--help"], capture_output=True, text=True, cwd=ROOT)
    assert sub.returncode == 0 and "--model" in sub.stdout


def test_every_current_figure_is_captioned_in_the_cell_that_draws_it():
    """A current page's figure carries its takeaway (repro.book.notebook.caption) from the cell that shows it; the
    superseded appendix's pages are history and exempt."""
    import json

    import yaml

    toc = yaml.safe_load((ROOT / "book" / "_toc.yml").read_text())
    superseded = {chapter["file"] for part in toc["parts"] if "superseded" in part["caption"]
                  for chapter in part["chapters"]}
    bare = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        if path.stem in superseded:
            continue
        for cell in json.loads(path.read_text())["cells"]:
            source = "".join(cell["source"])
            if cell["cell_type"] == "code" and "plt.show()" in source and "caption(" not in source:
                bare.append((path.name, source.splitlines()[0][:60]))
    assert not bare, bare


def test_every_registered_paper_has_its_package_and_pages():
    from repro.cli import COMMANDS
    from repro.pages.parameters import NOTEBOOKS

    for paper in papers():
        package = REPRO / paper.package.split(".")[1]
        assert (package / "__init__.py").read_text().startswith('"""'), f"{paper.package} states what it holds"
        assert set(paper.pages) <= set(NOTEBOOKS) and paper.summary.endswith("_summary"), paper.pages
        assert set(paper.ledger_pages) <= set(paper.pages)
        # its commands are the `repro` command's, run by a module of its own package
        assert all(COMMANDS[name] == target and target.startswith(paper.package) for name, target in paper.commands)


def test_a_toy_fourth_paper_registers_and_its_statements_reach_the_ledger(monkeypatch):
    """The README's "Adding a paper", in miniature: a paper of two statements on one page, registered for the test,
    reaches the ledger built from the registry: titled, BH-adjusted with the others, its verdicts the engine's."""
    from dataclasses import replace

    import numpy as np
    import pandas as pd

    from repro.crosspaper import ledger, registry
    from repro.crosspaper.ledger_schema import COLUMNS, PAPERS, from_claims
    from repro.verdicts.comparison import claims_table

    def toy_rows(profile: str = "standard", recompute: bool = False) -> pd.DataFrame:
        rng = np.random.default_rng(0)
        tasks = [("STS", f"toy STS {i}") for i in range(9)]
        base = rng.uniform(40, 60, len(tasks))
        wide = pd.DataFrame({"baseline": base, "toy": base + 3 + rng.normal(0, 0.5, len(tasks))},
                            index=pd.MultiIndex.from_tuples(tasks, names=["category", "task"]))
        claims = [("the toy method beats its baseline on STS", "toy", "baseline", "STS", "better"),
                  ("the baseline beats the toy method on STS", "baseline", "toy", "STS", "better")]
        return from_claims(4, claims_table(wide, claims), "a toy scale: 9 tasks", "p1_summary")

    # the three papers' stored rows take minutes to read: their builders return no row here, the loop is the test
    for number in (1, 2, 3):
        monkeypatch.setitem(registry.REGISTRY, number, replace(registry.REGISTRY[number],
                                                              rows=lambda *a, **k: pd.DataFrame(columns=COLUMNS)))
    monkeypatch.setattr(ledger, "combination_rows", lambda table: pd.DataFrame(columns=COLUMNS))
    monkeypatch.setattr(ledger, "combination_table", lambda: None)
    facts = {"scope": "two toy statements.", "hard": "nothing.", "scale": "ours: 9 tasks; the paper: 9 (quoted)."}
    toy = registry.Paper(4, "Toy (Doe, arXiv 0000.00000)", "repro.pooling_attention", ("p1_summary",), toy_rows,
                         facts=lambda profile: facts)
    with registry.registered(toy):
        assert PAPERS[4] == toy.title and list(PAPERS) == [1, 2, 3, 4]
        table = ledger.claims_ledger()
        assert table["paper"].eq(toy.title).all() and len(table) == 2 and "p (BH)" in table
        verdicts = dict(zip(table["claim"].map(ledger.statement_of), table["verdict"]))
        assert verdicts == {"the toy method beats its baseline on STS": "supported",
                            "the baseline beats the toy method on STS": "contradicted"}
        from repro.crosspaper.summaries import summary_markdown  # its summary paragraph, from the registry too

        text = summary_markdown(4, "Toy", {"supported": 1, "contradicted": 1, "tested": 2}, {"tested": 0})
        assert text.startswith("**Toy.** *Scope:* two toy statements.") and "*Scale:* ours: 9 tasks" in text
        with pytest.raises(ValueError, match="registered already"):
            with registry.registered(toy):
                pass
    assert 4 not in list(PAPERS)
    with pytest.raises(TypeError, match="register a repro.crosspaper.registry.Paper"):
        with registry.registered("toy"):
            pass
