"""Every lab table in the READMEs is what its committed result files render, and changes when they change."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from capsel_lab.result_tables import BLOCK, DOCUMENTS, render, stale_documents

ROOT = Path(__file__).resolve().parents[2]


def test_every_readme_table_equals_what_its_committed_json_renders():
    assert stale_documents(ROOT) == []


def test_every_table_block_names_committed_files_and_a_known_renderer():
    blocks = [match for name in DOCUMENTS for match in BLOCK.finditer((ROOT / name).read_text(encoding="utf-8"))]
    assert blocks
    for match in blocks:
        for name in match.group("files").split():
            assert (ROOT / name).is_file() and name.startswith(("docs/lab/", "capsel/data/")), name


def test_a_changed_result_file_changes_the_table(tmp_path):
    (tmp_path / "docs" / "lab").mkdir(parents=True)
    source = ROOT / "docs" / "lab" / "noise_gemma3-270m-raw.json"
    shutil.copy(source, tmp_path / "docs" / "lab" / source.name)
    text = f"before\n<!-- table: noise-selections docs/lab/{source.name} -->\nold\n<!-- /table -->\nafter\n"
    rendered = render(text, tmp_path)
    assert rendered.startswith("before\n") and rendered.endswith("<!-- /table -->\nafter\n")
    assert "| Gemma 3 270M (base) | raw | 19 of 147 (salad 18, shuffled 1) |" in rendered
    changed = json.loads(source.read_text())
    changed["aggregate"]["selections"]["cap"]["n_junk"] = 3
    (tmp_path / "docs" / "lab" / source.name).write_text(json.dumps(changed))
    assert "| 3 of 147 (salad 18, shuffled 1) |" in render(rendered, tmp_path)
