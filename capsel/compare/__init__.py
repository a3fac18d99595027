"""`capsel compare`: how the selections of every scored method on one pool differ."""
