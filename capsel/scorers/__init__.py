"""How methods score: the scorer interface every method implements (base.py) and CAP's scorer (cap.py)."""
