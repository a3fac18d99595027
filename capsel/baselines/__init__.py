"""The scorers of the paper's baselines (PPL, IFD, QuRating-style rater, k-center, LESS), each with a typed config
and a DB-free scorer; what each method is (spec, tables, selector) is declared in capsel/methods/.
"""
