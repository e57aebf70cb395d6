"""The per-repository dashboard issue."""
