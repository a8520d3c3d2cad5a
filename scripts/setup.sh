#!/usr/bin/env bash
# Create .venv (or $REPRO_VENV) and install the pinned stack; idempotent and quick when already installed.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${REPRO_VENV:-.venv}"
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
# pip compiles every installed file to bytecode: 90-180 s of a fresh setup here, for files mostly never imported.
# Where Python may write bytecode itself (PYTHONDONTWRITEBYTECODE unset, as .ci/run runs), it is skipped and each
# module is compiled once, when first imported; where it may not, pip compiles (else every process would compile)
COMPILE=()
if [ -z "${PYTHONDONTWRITEBYTECODE:-}" ]; then COMPILE=(--no-compile); fi
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q "${COMPILE[@]}" -r requirements.txt -c constraints.txt
"$VENV/bin/python" -m pip install -q "${COMPILE[@]}" --no-deps -r requirements-nodeps.txt -c constraints.txt
"$VENV/bin/python" -m pip install -q --no-deps --no-build-isolation -e .
# The project's venv as a named Jupyter kernel ('repro', in the venv: `.venv/bin/jupyter lab` lists it). It sets
# REPRO_TRAINING=refuse: running a page in JupyterLab renders from committed results and never starts a training.
"$VENV/bin/python" -m ipykernel install --sys-prefix --name repro --display-name "Python (repro)" \
  --env REPRO_TRAINING refuse >/dev/null
"$VENV/bin/python" -c "import torch, transformers, mteb; print('setup ok: torch', torch.__version__, '| transformers', transformers.__version__, '| mteb', mteb.__version__)"
# Headless Chromium renders the built book in a test (Debian package; needs root).
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "warning: chromium is missing (sudo apt-get install chromium); the book rendering test will fail" >&2
  fi
fi
# MathJax 3 for the book, served locally (no CDN): npm's tarball, its es5/ folder only.
if [ ! -f book/_vendor/mathjax/tex-chtml.js ]; then
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent mathjax@3.2.2 >/dev/null && tar xzf mathjax-3.2.2.tgz)
  mkdir -p book/_vendor
  rm -rf book/_vendor/mathjax && cp -r "$tmp/package/es5" book/_vendor/mathjax
  rm -rf "$tmp"
fi
