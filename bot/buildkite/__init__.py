"""Buildkite: the REST client, its job states read once, artifact and wheel downloads."""
