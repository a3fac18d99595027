"""Hostile pools and run parameters (#32) through the selection flow as `capsel flow select --config` runs it, on
a real Prefect server: the parameters file is a run's parameters (checked against the roots the environment sets,
nothing written when refused), and a pool whose rows point images at the machine's network and files, with markup
and escape codes in its domains, is ingested, scored and published with each such row quarantined, no request made
and every name printed as text."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import orjson
import pytest

from tests.support.flow_cli import run_flow_cli
from tests.support.flow_pool import flow_config, tiny_flow_model, write_pool_file
from tests.support.request_log_server import RequestLogServer

pytestmark = pytest.mark.e2e
SALAD = "\x1b[31m[bold]math[/]\u202e"


def hostile_rows(server: RequestLogServer, secret: Path) -> list[dict]:
    ask = {"instruction": "what is the colour of this", "response": "a colour seen in the image", "domain": "math"}
    return [
        {**ask, "image": server.url("/admin/delete?all=1")},
        {**ask, "image": f"ftp://127.0.0.1:{server.port}/x.png"},
        {**ask, "image": str(secret)},
        {**ask, "image": "../outside/secret.png"},
        {**ask, "image": "zip://a.png::file:///etc/passwd"},
        {**ask, "image": "/dev/zero"},
        {"instruction": "a question in a domain named as markup", "response": "its answer", "domain": SALAD},
    ]


def test_a_run_leaving_the_roots_is_refused_and_a_hostile_pool_is_quarantined_row_by_row(
        prefect_server, request_log, tmp_path):
    root = tmp_path / "root"
    incoming = write_pool_file(root / "incoming" / "pool.jsonl", 10, seed=7).parent
    secret = tmp_path / "outside" / "secret.png"
    secret.parent.mkdir()
    secret.write_bytes(b"\x89PNG not really")
    with open(incoming / "pool.jsonl", "a") as handle:
        handle.write("\n" + "\n".join(json.dumps(row) for row in hostile_rows(request_log, secret)) + "\n")
    model = tiny_flow_model(root / "models" / "tiny")
    env = prefect_server.env(CAPSEL_OUTPUT_ROOT=str(root), CAPSEL_INCOMING_DIR=str(incoming),
                             CAPSEL_SOURCE_ROOTS="", CAPSEL_MODEL_ROOTS=str(root / "models"))

    escaping = flow_config(root, model, [str(incoming)]).model_copy(update={"output_root": str(tmp_path / "else")})
    refused = run_flow_cli("select", escaping, env, tmp_path)
    assert refused.returncode == 3, refused.stdout[-2000:] + refused.stderr[-2000:]
    assert (f"run parameter output_root {str(tmp_path / 'else')!r} is outside {str(root)!r} (CAPSEL_OUTPUT_ROOT)"
            in refused.stderr)
    assert not (tmp_path / "else").exists() and not (root / "capsel.duckdb").exists()
    reading = flow_config(root, model, ["/etc"]).model_copy(update={"output_root": None})
    assert "run parameter sources.paths '/etc' is outside" in run_flow_cli("select", reading, env, tmp_path).stderr

    done = run_flow_cli("select", flow_config(root, model, [str(incoming)], check_profile=False), env, tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert request_log.requests == [] and request_log.connections == 0
    assert "\x1b" not in done.stdout + done.stderr and "\u202e" not in done.stdout + done.stderr
    con = duckdb.connect(str(root / "capsel.duckdb"), read_only=True)
    try:
        reasons = sorted(con.execute("select reason from quarantine where reason like 'image%'").fetchall())
        domains = {row[0] for row in con.execute("select distinct domain from candidates").fetchall()}
    finally:
        con.close()
    assert reasons == [("image_refused",)] * 6  # the device too: /dev lies outside the pool's folder
    assert SALAD in domains  # stored exactly as the pool wrote it: only what is printed is escaped
    (published,) = (root / "out" / "selections").glob("sel-*")
    assert orjson.loads((published / "manifest.json").read_bytes())["gate"]["success"]
