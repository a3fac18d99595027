"""`capsel pilot`: which method, at which budget, for a model and a pool, with evidence (the design, the runs, the
statistics and the report; no Prefect here)."""
