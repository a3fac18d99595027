"""Package discovery: sql/, flows/ and tasks/ ship inside capsel (capsel.sql, capsel.flows, capsel.tasks);
the lab ships as capsel_lab; data files ship too."""

from setuptools import find_packages, setup

SQL_PACKAGES = ["capsel.sql", "capsel.sql.migrations"]

# sql/ holds one folder per package that runs the statements (store/, selection/, ingest/, ...)
PACKAGE_DATA = {"capsel.sql": ["*/*.sql"], "capsel.sql.migrations": ["*.sql"]}
# the bundled demo model (weights, tokenizer, card, loss curve) and the profile's sample texts
PACKAGE_DATA["capsel.models"] = ["demo/*.safetensors", "demo/*.json", "demo/*.md", "demo/*.png"]
PACKAGE_DATA["capsel.profile"] = ["*.txt"]
# the bundled sample pool (JSONL, CSV, Parquet and its manifest), the demo's lab pool, the real sources
# (GSM8K train, HumanEval, their licences and provenance) and the real pool built from them
PACKAGE_DATA["capsel.data"] = ["sample_pool/*", "lab_pool/*", "real/*", "real_pool/*"]

setup(
    # flows/ and tasks/ stay top-level folders of the repository and install inside capsel; the research lab
    # is a package of its own that selecting and scoring never import
    packages=find_packages(include=["capsel", "capsel.*", "capsel_lab", "capsel_lab.*"]) + SQL_PACKAGES
    + ["capsel.flows", "capsel.tasks"],
    package_dir={"capsel.sql": "sql", "capsel.flows": "flows", "capsel.tasks": "tasks"},
    package_data=PACKAGE_DATA,
)
