"""Output paths from users never escape the output root."""

import pytest

from capsel.errors import CapselError
from capsel.paths import inside_root


def test_relative_path_lands_inside_root(tmp_path):
    assert inside_root(tmp_path, "sel/v1") == (tmp_path / "sel" / "v1").resolve()


@pytest.mark.parametrize("escape", ["../elsewhere", "a/../../b", "/etc"])
def test_escaping_paths_are_refused(tmp_path, escape):
    with pytest.raises(CapselError, match="outside the output root"):
        inside_root(tmp_path / "root", escape)


def test_symlink_out_of_root_is_refused(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to(tmp_path)
    with pytest.raises(CapselError):
        inside_root(root, "link/x")
