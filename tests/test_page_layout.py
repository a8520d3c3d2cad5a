"""The built page's order: the parameters it ran with at its end (repro.book.page_layout)."""

from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from repro.book.page_layout import HEADING, TERMS, glossary_line, parameters_last


def _page(injected: bool):
    cells = [new_markdown_cell("# Title\n\n**Finding.** x"),
             new_code_cell('profile = "standard"', metadata={"tags": ["parameters"] + (["remove-cell"] if injected
                                                                                      else [])})]
    if injected:
        cells.append(new_code_cell('# Parameters\nprofile = "smoke"', metadata={"tags": ["injected-parameters"]}))
    cells.append(new_code_cell("display(1)", metadata={"tags": ["hide-input"]}))
    return new_notebook(cells=cells)


def test_the_shown_parameters_move_to_the_end_under_the_rerun_line():
    for injected in (True, False):
        nb = parameters_last(_page(injected), "p3_memory")
        heading, shown = nb.cells[-2], nb.cells[-1]
        assert heading.source.startswith(HEADING) and "--only p3_memory" in heading.source
        assert "reruns/p3_memory.html" in heading.source
        assert ('profile = "smoke"' if injected else 'profile = "standard"') in shown.source
        assert nb.cells[0].source.startswith("# Title") and nb.cells[-3].source == "display(1)"
        assert len(nb.cells) == (5 if injected else 4)
        assert parameters_last(nb, "p3_memory").cells == nb.cells  # applied twice: the same page


def test_a_results_page_links_the_glossary_once_under_its_opening():
    nb = glossary_line(_page(False), "p3_memory")
    assert nb.cells[1].source.startswith(f"*{TERMS}") and "{doc}`glossary`" in nb.cells[1].source
    assert glossary_line(nb, "p3_memory").cells == nb.cells  # once
    assert all(not c.source.startswith(f"*{TERMS}") for c in glossary_line(_page(False), "intro").cells)
