"""The `capsel` command line."""
