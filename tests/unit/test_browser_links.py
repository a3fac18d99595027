"""Artifact links: through the served output root when CAPSEL_OUTPUTS_URL is set, else file://."""

from capsel.orchestration.links import browser_link


def test_served_root_gives_http_links(tmp_path):
    path = tmp_path / "out" / "selections" / "sel 1" / "report" / "index.html"
    link = browser_link(path, tmp_path / "out", "http://127.0.0.1:8765/")
    assert link == "http://127.0.0.1:8765/selections/sel%201/report/index.html"


def test_without_url_or_outside_the_root_the_link_is_a_file_uri(tmp_path):
    inside = tmp_path / "out" / "a.json"
    assert browser_link(inside, tmp_path / "out", None) == inside.resolve().as_uri()
    outside = tmp_path / "elsewhere" / "a.json"
    assert browser_link(outside, tmp_path / "out", "http://h:1") == outside.resolve().as_uri()
    # a sibling whose name starts with the root's is still outside it
    sibling = tmp_path / "out2" / "a.json"
    assert browser_link(sibling, tmp_path / "out", "http://h:1").startswith("file://")
