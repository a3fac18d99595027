"""A pilot names the exact code it ran: a clean checkout by its commit; a dirty one is refused, or with leave recorded
by its diff's hash (a real git repository in a temporary folder)."""

from __future__ import annotations

import hashlib
import subprocess

import pytest

from capsel.errors import CapselError
from capsel.pilot.provenance import provenance


def git(root, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def checkout(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "capsel").mkdir()
    (tmp_path / "capsel" / "code.py").write_text("x = 1\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    return tmp_path


def test_a_clean_checkout_is_named_by_its_commit(checkout):
    found = provenance(False, checkout)
    assert found["commit"] == git(checkout, "rev-parse", "HEAD").strip() and found["dirty"] is False
    assert found["diff_sha256"] is None


def test_a_dirty_checkout_is_refused_or_recorded_by_its_diffs_hash(checkout):
    (checkout / "capsel" / "code.py").write_text("x = 2\n")
    with pytest.raises(CapselError, match="uncommitted changes") as refused:
        provenance(False, checkout)
    assert "\n" not in str(refused.value)
    found = provenance(True, checkout)
    diff = subprocess.run(["git", "-C", str(checkout), "diff", "HEAD", "--binary"], capture_output=True,
                          check=True).stdout
    assert found["dirty"] is True and found["diff_sha256"] == hashlib.sha256(diff).hexdigest()
    (checkout / "capsel" / "new.py").write_text("y = 1\n")  # an untracked module counts too
    assert provenance(True, checkout)["diff_sha256"] != found["diff_sha256"]


def test_outside_a_checkout_the_version_names_it(tmp_path):
    found = provenance(False, tmp_path / "not-a-repo")
    assert found["commit"] is None and found["version"]
