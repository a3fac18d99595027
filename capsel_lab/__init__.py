"""The validation lab: a synthetic world, the demo model trained on it, and experiments on both."""
