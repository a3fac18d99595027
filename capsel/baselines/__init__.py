"""The paper's baseline selectors (PPL, IFD, QuRating-style rater, k-center): scorers, store and runner.

A method is one module with a typed config and a DB-free scorer, plus one entry in `registry`.
"""
