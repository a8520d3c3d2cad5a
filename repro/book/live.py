"""Run a page as a reader does in JupyterLab: a headless Jupyter server on a loopback port, the notebook opened
through its REST API, its cells executed one by one in the kernel its metadata names (the venv's ``repro``
kernel, which refuses training), over the kernel's websocket.

    python -m repro.book.live notebooks/p2_main_table.ipynb [more.ipynb ...]

prints each page's time and the number of outputs, and fails on the first cell error.
"""

from __future__ import annotations

import argparse
import json
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import websocket

from repro.store.paths import REPO_ROOT


@dataclass
class CellRun:
    """One executed code cell: its source, its outputs (nbformat-like dicts) and its error, if any."""

    source: str
    outputs: list[dict] = field(default_factory=list)
    error: str | None = None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A running Jupyter server (``jupyter server``, no browser, token auth) rooted at ``root``."""

    def __init__(self, url: str, token: str):
        self.url, self.token = url, token

    def request(self, method: str, path: str, body: dict | None = None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.url}{path}", data=data, method=method,
                                     headers={"Authorization": f"token {self.token}",
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as response:
            text = response.read().decode()
        return json.loads(text) if text else {}


@contextmanager
def jupyter_server(root: str | Path = REPO_ROOT, startup_timeout: float = 90.0):
    """Start ``jupyter server`` on a free loopback port, wait until its API answers, stop it on exit."""
    port, token = _free_port(), secrets.token_hex(16)
    command = [str(Path(sys.executable).parent / "jupyter"), "server", "--no-browser", "--ip=127.0.0.1",
               f"--port={port}", f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={token}",
               "--ServerApp.port_retries=0", "--allow-root"]
    log = tempfile.TemporaryFile(mode="w+")  # (a pipe nobody reads would fill and block the server)
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log, text=True)
    server = Server(f"http://127.0.0.1:{port}", token)
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            try:
                server.request("GET", "/api/status")
                break
            except OSError as error:
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise RuntimeError(f"the Jupyter server did not start: {log.read()[-2000:]}") from error
                time.sleep(0.5)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def _message(session: str, code: str) -> dict:
    msg_id = uuid.uuid4().hex
    return {"header": {"msg_id": msg_id, "username": "reader", "session": session, "msg_type": "execute_request",
                       "version": "5.3", "date": ""},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True}}


def _execute(ws, session: str, code: str, timeout: float) -> CellRun:
    request = _message(session, code)
    ws.send(json.dumps(request))
    run, replied, idle = CellRun(code), False, False
    deadline = time.monotonic() + timeout
    while not (replied and idle):
        ws.settimeout(max(1.0, deadline - time.monotonic()))
        if time.monotonic() > deadline:
            raise TimeoutError(f"a cell ran longer than {timeout:.0f} s:\n{code[:300]}")
        msg = json.loads(ws.recv())
        if msg.get("parent_header", {}).get("msg_id") != request["header"]["msg_id"]:
            continue
        kind, content = msg["header"]["msg_type"], msg["content"]
        if kind in ("stream", "display_data", "execute_result"):
            run.outputs.append({"output_type": kind, **content})
        elif kind == "error":
            run.error = f"{content['ename']}: {content['evalue']}"
        elif kind == "execute_reply":
            replied = True
            if content.get("status") == "error" and run.error is None:
                run.error = f"{content.get('ename')}: {content.get('evalue')}"
        elif kind == "status" and content.get("execution_state") == "idle":
            idle = True
    return run


def run_notebook(server: Server, path: str, cell_timeout: float = 900.0, extra_code: str | None = None
                 ) -> tuple[dict, list[CellRun]]:
    """Open ``path`` (relative to the server root) through the contents API, start a session with the kernel
    its metadata names, run its code cells top to bottom (stopping at the first error) and ``extra_code``
    after them; returns the kernel model and the cell runs. The session is deleted afterwards."""
    notebook = server.request("GET", f"/api/contents/{path}?content=1&type=notebook")["content"]
    kernel_name = notebook["metadata"]["kernelspec"]["name"]
    session = server.request("POST", "/api/sessions", {"path": path, "type": "notebook", "name": Path(path).name,
                                                        "kernel": {"name": kernel_name}})
    kernel = session["kernel"]
    ws_url = server.url.replace("http", "ws", 1) + f"/api/kernels/{kernel['id']}/channels?token={server.token}"
    ws = websocket.create_connection(ws_url, timeout=60)
    runs: list[CellRun] = []
    try:
        sources = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                   for c in notebook["cells"] if c["cell_type"] == "code"]
        for code in sources + ([extra_code] if extra_code else []):
            runs.append(_execute(ws, session["id"], code, cell_timeout))
            if runs[-1].error:
                break
    finally:
        ws.close()
        server.request("DELETE", f"/api/sessions/{session['id']}")
    return kernel, runs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="+")
    args = parser.parse_args(argv)
    failed = False
    with jupyter_server() as server:
        for path in args.notebooks:
            relative = str(Path(path).resolve().relative_to(REPO_ROOT))
            start = time.perf_counter()
            kernel, runs = run_notebook(server, relative)
            error = next((r.error for r in runs if r.error), None)
            print(f"{relative}: {time.perf_counter() - start:.1f} s, kernel {kernel['name']}, {len(runs)} cells, "
                  f"{sum(len(r.outputs) for r in runs)} outputs" + (f", ERROR {error}" if error else ""), flush=True)
            failed |= error is not None
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
