"""`python -m capsel` runs the CLI."""

from capsel.cli.main import main

# Guarded: ingest's spawned parse workers import the main module and must not rerun the CLI.
if __name__ == "__main__":
    main()
