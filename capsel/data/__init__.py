"""Data shipped with capsel: the bundled sample pool the demo ingests."""
