"""GitHub and Buildkite stand-ins on loopback, for the tests and the demo."""
