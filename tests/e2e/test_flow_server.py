"""`capsel flow server`: a long-lived Prefect server (API, UI, scheduler) with the settings capsel needs."""

from __future__ import annotations

import os
import sys

import httpx
import pytest

from tests.support.processes import free_port, kill_group, start_group, wait_healthy

pytestmark = pytest.mark.e2e


def test_the_server_serves_api_and_ui_without_telemetry_and_says_what_to_export(tmp_path):
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PREFECT_", "CAPSEL_"))}
    env |= {"PREFECT_HOME": str(tmp_path / "prefect"), "COLUMNS": "200"}
    log = tmp_path / "server.log"
    process = start_group([sys.executable, "-m", "capsel", "flow", "server", "--port", str(port)], env, log)
    try:
        api = f"http://127.0.0.1:{port}/api"
        wait_healthy(f"{api}/health", process, log, timeout_s=180)
        assert f"export PREFECT_API_URL={api}" in log.read_text()
        settings = httpx.get(f"{api}/admin/settings").json()
        # telemetry off: its write raced the server's startup with a 'database is locked' traceback
        assert settings["server"]["analytics_enabled"] is False
        assert settings["server"]["services"]["scheduler"]["enabled"] is True
        ui = httpx.get(f"http://127.0.0.1:{port}/")
        assert ui.status_code == 200 and "<html" in ui.text.lower()
    finally:
        kill_group(process)
    assert "Traceback" not in log.read_text()
