"""`capsel serve`: a real server process over a real output root, read with httpx."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from tests.support.processes import free_port, kill_group, start_group, wait_healthy

pytestmark = pytest.mark.e2e


@pytest.fixture()
def served(tmp_path):
    """An output root with a selection, links inside and out of it, and a secret beside it; served by capsel."""
    root = tmp_path / "out"
    report = root / "selections" / "sel-1" / "report"
    report.mkdir(parents=True)
    (report / "index.html").write_text("<h1>report</h1>")
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "key.txt").write_text("do not serve")
    (root / "leak.txt").symlink_to(secret / "key.txt")
    (root / "leakdir").symlink_to(secret, target_is_directory=True)
    (root / "latest").symlink_to(root / "selections" / "sel-1", target_is_directory=True)
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")} | {"COLUMNS": "300"}
    log = tmp_path / "serve.log"
    process = start_group([sys.executable, "-m", "capsel", "serve", "--root", str(root), "--port", str(port)],
                          env, log, cwd=tmp_path)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(f"{url}/selections/sel-1/report/index.html", process, log, timeout_s=60)
    yield url, process, log
    kill_group(process)


def test_serves_the_root_and_nothing_outside_it(served):
    url, process, log = served
    assert f"CAPSEL_OUTPUTS_URL={url}" in log.read_text()  # without --host: loopback only
    with httpx.Client(base_url=url) as client:
        assert client.get("/selections/sel-1/report/index.html").text == "<h1>report</h1>"
        assert client.get("/latest/report/index.html").text == "<h1>report</h1>"  # a link within the root
        for path in ("/leak.txt", "/leakdir/key.txt", "/leakdir/", "/../secret/key.txt", "/%2e%2e/secret/key.txt"):
            response = client.get(path)
            assert response.status_code == 404 and "do not serve" not in response.text, path
        listing = client.get("/selections/").text
        assert "sel-1" in listing
        # read-only: the handler knows GET and HEAD only
        assert client.post("/selections/sel-1/report/index.html", content=b"x").status_code == 501
        assert client.put("/new.txt", content=b"x").status_code == 501


def test_ctrl_c_stops_it_cleanly(served):
    _, process, log = served
    os.killpg(process.pid, signal.SIGINT)
    deadline = time.monotonic() + 20
    while process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert process.returncode == 0, log.read_text()
    assert "stopped" in log.read_text()


def test_refuses_a_missing_root(tmp_path):
    done = subprocess.run([sys.executable, "-m", "capsel", "serve", "--root", str(tmp_path / "nope")],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "300"})
    assert done.returncode != 0 and "not a folder" in done.stderr
