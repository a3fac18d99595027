"""A method is its own module or package: nothing outside capsel/methods branches on a method's name, nothing
outside a method's package reaches past its declaration into its scorer or classes, and each declaration holds
together (its spec names it, its scorer and selector exist, its tables are the store's)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from capsel.errors import OptionError
from capsel.methods.method import load_object
from capsel.methods.registry import all_methods, method, scored_methods

ROOT = Path(__file__).resolve().parents[2]
RESULT_TABLES = {"divergences", "method_scores", "embeddings", "gradient_features"}


def name_branches(text: str, names: list[str]) -> list[str]:
    """Lines that compare something with a method's name, test membership in names, or key a lookup by one."""
    quoted = "|".join(re.escape(name) for name in names)
    literal = rf"""["']({quoted})["']"""
    patterns = [rf"(==|!=|\bin\b|\bis\b)\s*\(?\s*{literal}", rf"{literal}\s*(==|!=|\bin\b)",
                rf"\.get\(\s*{literal}", rf"\(\s*{literal}\s*,\s*{literal}"]
    return [line.strip() for line in text.splitlines() if any(re.search(pattern, line) for pattern in patterns)]


def test_the_detector_sees_each_kind_of_branch():
    names = ["cap", "random"]
    assert name_branches('if method == "cap":', names)
    assert name_branches("if method in ('cap', 'random'):", names)
    assert name_branches('x = {"cap": 1}.get("cap", 2)', names)
    assert name_branches('if "random" != wanted:', names)
    assert not name_branches('columns = ["d_early", "cap", "z"]', names)


def test_no_code_outside_the_method_modules_branches_on_a_method_name():
    names = list(all_methods())
    roots = [ROOT / "capsel", ROOT / "flows", ROOT / "tasks"]
    found = {}
    for root in roots:
        for path in root.rglob("*.py"):
            if path.is_relative_to(ROOT / "capsel" / "methods") or path.is_symlink():
                continue
            if lines := name_branches(path.read_text(), names):
                found[str(path.relative_to(ROOT))] = lines
    assert found == {}


def reaches_into_a_method(text: str, packages: list[str]) -> list[str]:
    """Imports of a method package's own modules (its scorer, its classes), past the declaration in __init__."""
    quoted = "|".join(re.escape(package) for package in packages)
    pattern = rf"capsel\.methods\.({quoted})\.\w+"
    return [line.strip() for line in text.splitlines() if re.search(pattern, line)]


def test_the_reach_detector_sees_an_import_of_a_method_module_and_not_of_its_declaration():
    assert reaches_into_a_method("from capsel.methods.cap.scorer import CapScorer", ["cap"])
    assert reaches_into_a_method('scorer="capsel.methods.less.job:score_target"', ["less"])
    assert not reaches_into_a_method("from capsel.methods.less import TARGET_MAX", ["less"])
    assert not reaches_into_a_method("from capsel.methods.method import Method", ["cap"])


def test_nothing_outside_a_method_package_imports_its_modules():
    methods = ROOT / "capsel" / "methods"
    packages = [path.parent.name for path in methods.glob("*/__init__.py")]
    assert {"cap", "less", "ppl"} <= set(packages)
    found = {}
    for root in (ROOT / "capsel", ROOT / "flows", ROOT / "tasks"):
        for path in root.rglob("*.py"):
            inside = [package for package in packages if path.is_relative_to(methods / package)]
            if path.is_symlink():
                continue
            others = [package for package in packages if package not in inside]
            if lines := reaches_into_a_method(path.read_text(), others):
                found[str(path.relative_to(ROOT))] = lines
    assert found == {}


@pytest.mark.parametrize("name", list(all_methods()))
def test_each_declaration_holds_together(name):
    declared = method(name)
    assert declared.name == name
    assert declared.selection_table in RESULT_TABLES and declared.results_table in RESULT_TABLES
    assert callable(load_object(declared.selector.pick))
    assert declared.selector.rule(name, None)
    if declared.spec is None:
        assert declared.scores_of in {scored.name for scored in scored_methods()}
        return
    assert declared.spec.model_fields["method"].default == name
    assert callable(load_object(declared.scorer))
    for field in declared.spec.source_fields:
        assert field in declared.spec.model_fields


def test_an_unknown_method_lists_the_known_ones():
    with pytest.raises(OptionError, match="unknown method 'nope'; choose one of cap, random, ppl"):
        method("nope")
