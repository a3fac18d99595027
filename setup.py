"""Package discovery: the top-level sql/ folder ships as the capsel.sql package; data files ship too."""

from setuptools import find_packages, setup

SQL_PACKAGES = ["capsel.sql", "capsel.sql.migrations"]

PACKAGE_DATA = {name: ["*.sql"] for name in SQL_PACKAGES}
# the bundled demo model (weights, tokenizer, card, loss curve) and the profile's sample texts
PACKAGE_DATA["capsel.models"] = ["demo/*.safetensors", "demo/*.json", "demo/*.md", "demo/*.png"]
PACKAGE_DATA["capsel.profile"] = ["*.txt"]
# the bundled sample pool (JSONL, CSV, Parquet and its manifest), the demo's lab pool, the real sources
# (GSM8K train, HumanEval, their licences and provenance) and the real pool built from them
PACKAGE_DATA["capsel.data"] = ["sample_pool/*", "lab_pool/*", "real/*", "real_pool/*"]

setup(
    packages=find_packages(include=["capsel", "capsel.*", "flows", "tasks"]) + SQL_PACKAGES,
    package_dir={"capsel.sql": "sql"},
    package_data=PACKAGE_DATA,
)
