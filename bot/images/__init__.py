"""The images a build's steps pull, and whether the registry has them (invariant 7)."""
