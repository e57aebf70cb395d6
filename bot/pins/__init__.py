"""Pin bumps: the bump flow, its wording and the pin commands."""
