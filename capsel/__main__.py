"""`python -m capsel` runs the CLI."""

from capsel.cli.main import main

main()
