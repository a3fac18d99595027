"""Pool ingest: stream source files, dedup as the paper does, quarantine bad rows, store in DuckDB."""
