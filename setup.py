"""Package discovery: the top-level sql/ folder ships as the capsel.sql package."""

from setuptools import find_packages, setup

SQL_PACKAGES = ["capsel.sql", "capsel.sql.migrations"]

setup(
    packages=find_packages(include=["capsel", "capsel.*", "flows", "tasks"]) + SQL_PACKAGES,
    package_dir={"capsel.sql": "sql"},
    package_data={
        **{name: ["*.sql"] for name in SQL_PACKAGES},
        # the bundled demo pool (JSONL, CSV, Parquet and its manifest) ships in the wheel
        "capsel.data": ["sample_pool/*"],
    },
)
