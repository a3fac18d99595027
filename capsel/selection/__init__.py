"""Selection: per-domain residualization, budgets and the members of a selection."""
