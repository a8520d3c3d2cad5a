"""Render built book pages in headless Chromium (Debian ``chromium``): a PNG to look at, and the DOM
after scripts ran (to check that MathJax typeset the math offline and that figures are there).

    python -m repro.book.screenshot book/_build/html/intro.html book/_build/html/p1_layer_correlation.html
    python -m repro.book.screenshot --height 8000 book/_build/html/leaderboard.html   # a long page, whole
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--virtual-time-budget=15000", "--allow-file-access-from-files"]


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise FileNotFoundError("headless Chromium not found: apt-get install chromium")


def _run(args: list[str]) -> str:
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                              text=True, timeout=180)
    return done.stdout


def rendered_dom(page: Path) -> str:
    """The page's DOM after its scripts ran (MathJax included)."""
    return _run(["--dump-dom", Path(page).resolve().as_uri()])


MEASURE = """<!doctype html><html><body style="margin:0"><pre id="out"></pre><script>
var pages = {pages}, left = pages.length, frames = {{}};
function collect() {{
  var out = {{}};
  pages.forEach(function (name) {{
    var doc = frames[name].contentDocument;
    out[name] = {{dom: doc.documentElement.outerHTML,
                 images: Array.prototype.map.call(doc.querySelectorAll("img"), function (img) {{
                   return {{src: img.getAttribute("src"), natural: img.naturalWidth,
                           shown: img.getBoundingClientRect().width}};
                 }}),
                 tables: Array.prototype.map.call(doc.querySelectorAll("main table"), function (table) {{
                   var column = doc.querySelector("main article") || doc.querySelector("main");
                   var heads = Array.prototype.map.call(table.querySelectorAll("thead th"), function (th) {{
                     return th.textContent.trim(); }});
                   return {{width: table.scrollWidth, column: column.clientWidth, heads: heads}};
                 }})}};
  }});
  document.getElementById("out").textContent = JSON.stringify(out);
}}
pages.forEach(function (name) {{
  var frame = document.createElement("iframe");
  frame.style = "border:0;display:block;width:{width}px;height:3000px";
  frame.onload = function () {{ if (--left === 0) setTimeout(collect, {settle}); }};  // scripts (MathJax) settle
  frame.src = name;
  frames[name] = frame;
  document.body.appendChild(frame);
}});
</script></body></html>"""


def rendered_pages(pages: list[Path], width: int = 1400, settle_ms: int = 4000) -> dict[str, dict]:
    """Every page (one folder) rendered by ONE Chromium run in a frame ``width`` CSS pixels wide, by file name:
    ``dom``, its DOM after its scripts ran (MathJax included: collected ``settle_ms`` of virtual time after the last
    frame loaded), ``images``, each image's ``src``, natural width and displayed width (CSS pixels), and ``tables``,
    each table's full width (its ``scrollWidth``: what a reader would have to scroll through), the width of the text
    column it sits in, and its header cells."""
    pages = [Path(page).resolve() for page in pages]
    folder = pages[0].parent
    with tempfile.NamedTemporaryFile("w", suffix=".html", dir=folder, delete=False) as wrapper:
        wrapper.write(MEASURE.format(pages=json.dumps([p.name for p in pages]), width=width, settle=settle_ms))
    try:
        dom = _run([f"--window-size={width + 40},2000", "--dump-dom", Path(wrapper.name).as_uri()])
    finally:
        Path(wrapper.name).unlink()
    found = re.search(r'<pre id="out">(.*?)</pre>', dom, re.S)
    if not found or not found.group(1).strip():
        raise RuntimeError(f"Chromium rendered none of the pages in {folder}")
    return json.loads(html.unescape(found.group(1)))


def image_sizes(pages: list[Path], width: int = 1400) -> dict[str, list[dict]]:
    """Every image of the rendered pages, by page file name: its ``src``, natural width and displayed width in a
    frame ``width`` CSS pixels wide (:func:`rendered_pages`)."""
    return {name: page["images"] for name, page in rendered_pages(pages, width).items()}


def screenshot(page: Path, png: Path, width: int = 1280, height: int = 2400) -> Path:
    png = Path(png).resolve()
    _run([f"--screenshot={png}", f"--window-size={width},{height}", Path(page).resolve().as_uri()])
    if not png.is_file():
        raise RuntimeError(f"Chromium wrote no screenshot for {page}")
    return png


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pages", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=Path("book/_build/screenshots"))
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=2400, help="window height in pixels (a long page: 8000)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for page in args.pages:
        print(screenshot(page, args.out / f"{page.stem}.png", args.width, args.height))


if __name__ == "__main__":
    main()
