"""Package discovery: sql/, flows/ and tasks/ ship inside capsel (capsel.sql, capsel.flows, capsel.tasks);
the lab ships as capsel_lab; data files ship too."""

from pathlib import Path

from setuptools import find_packages, setup

# sql/ holds one folder per package that runs the statements (store/, selection/, ingest/, migrations/, ...)
SQL_PACKAGES = ["capsel.sql"] + sorted(
    f"capsel.sql.{folder.name}" for folder in Path(__file__).parent.joinpath("sql").iterdir()
    if folder.is_dir() and folder.name != "__pycache__"
)
PACKAGE_DATA = {package: ["*.sql"] for package in SQL_PACKAGES}
# the bundled demo model (weights, tokenizer, card, loss curve) and the profile's sample texts
PACKAGE_DATA["capsel.models.demo"] = ["*.safetensors", "*.json", "*.md", "*.png"]
PACKAGE_DATA["capsel.profile"] = ["*.txt"]
# the bundled sample pool (JSONL, CSV, Parquet and its manifest), the demo's lab pool, the real sources
# (GSM8K train, HumanEval, their licences and provenance) and the real pool built from them; the lm-eval task
# templates capsel fills in for the harness
DATA_FOLDERS = ["capsel.data.sample_pool", "capsel.data.lab_pool", "capsel.data.real", "capsel.data.real_pool",
                "capsel.evaluation.harness_templates"]
PACKAGE_DATA.update({folder: ["*"] for folder in DATA_FOLDERS})

setup(
    # flows/ and tasks/ stay top-level folders of the repository and install inside capsel; the research lab
    # is a package of its own that selecting and scoring never import
    packages=find_packages(include=["capsel", "capsel.*", "capsel_lab", "capsel_lab.*"]) + SQL_PACKAGES
    + ["capsel.flows", "capsel.tasks"]
    # data folders hold no code; listed as packages so setuptools ships them without a warning per folder
    + DATA_FOLDERS + ["capsel.models.demo"],
    package_dir={"capsel.sql": "sql", "capsel.flows": "flows", "capsel.tasks": "tasks"},
    package_data=PACKAGE_DATA,
)
