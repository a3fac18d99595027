"""Installed plugins that are broken, or that take a built-in method's name, are each named in one warning and
skipped: every command (their help included) and every flow still works."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.flow_pool import write_pool_file

PLUGINS = {
    # package: (entry point name, its module's source)
    "capsel_raises": ("raises", "raise RuntimeError('this plugin is broken on import')\n"),
    "capsel_nomethod": ("nomethod", "METHOD = 'not a Method'\n"),
    "capsel_takes_cap": ("cap", "from capsel.methods.cap import METHOD\n"),
    # declared as "ratio" under an entry point called "ratios": the names disagree
    "capsel_misnamed": ("ratios", "from capsel.plugin import ModelFreeScorer, TopScore, model_free_method\n"
                                  "class Ratio(ModelFreeScorer):\n"
                                  "    def score(self, candidates):\n        return []\n"
                                  "METHOD = model_free_method('ratio', 'a ratio', Ratio, TopScore('high'))\n"),
}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A folder on PYTHONPATH holding three installed (dist-info) packages, each declaring a capsel.methods plugin."""
    folder = tmp_path_factory.mktemp("site")
    for package, (name, source) in PLUGINS.items():
        (folder / f"{package}.py").write_text(source)
        info = folder / f"{package}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[capsel.methods]\n{name} = {package}\n")
    return folder


def _capsel(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")}
    env.update(PYTHONPATH=os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])]),
               COLUMNS="200", CAPSEL_OUTPUT_ROOT=str(cwd / "out"))
    return subprocess.run([sys.executable, "-m", "capsel", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("warning:")]


@pytest.mark.parametrize("command", [["select", "--help"], ["score", "--help"], ["evaluate", "--help"],
                                     ["finetune", "--help"], ["score-baseline", "--help"], ["flow", "--help"],
                                     ["flow", "select", "--help"]])
def test_every_help_works_and_names_each_broken_plugin_once(site, tmp_path, command):
    done = _capsel(site, tmp_path, *command)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    warned = _warnings(done.stderr)
    assert len(warned) <= len(PLUGINS)  # each at most once, and only where a command lists the methods
    for line in warned:
        assert any(f"plugin {name} = '{package}'" in line and f"package {package} 0.1" in line
                   for package, (name, _) in PLUGINS.items()), line


def test_a_selection_runs_beside_broken_plugins_and_says_which_were_skipped(site, tmp_path):
    pool = write_pool_file(tmp_path / "pool.jsonl", 12, seed=3)
    assert _capsel(site, tmp_path, "ingest", str(pool)).returncode == 0
    done = _capsel(site, tmp_path, "select", "--method", "random", "--budget", "2", "--out", "sels")
    assert done.returncode == 0, done.stderr[-2000:]
    warned = " ".join(done.stderr.split())  # the warnings, however the terminal width wrapped them
    assert "plugin raises = 'capsel_raises' (package capsel_raises 0.1) was skipped: RuntimeError: this plugin " \
           "is broken on import" in warned
    assert "plugin nomethod = 'capsel_nomethod'" in warned and "names no capsel.plugin.Method" in warned
    assert "plugin cap = 'capsel_takes_cap'" in warned and "the method name 'cap' is already taken" in warned
    assert "plugin ratios = 'capsel_misnamed'" in warned and \
        "was refused: it declares the method 'ratio' but its entry point names it 'ratios'" in warned
    assert len(list((tmp_path / "sels").glob("sel-*"))) == 1


def test_a_worker_loads_every_flow_beside_broken_plugins(site, tmp_path):
    code = ("import capsel.flows.select_flow, capsel.flows.score_flow, capsel.flows.evaluate_flow, "
            "capsel.flows.rescore_flow; from capsel.methods.registry import method_names; print(method_names())")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "'cap'" in done.stdout and "raises" not in done.stdout and "ratio" not in done.stdout
