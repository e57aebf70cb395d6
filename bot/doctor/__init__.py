"""``followup-bot doctor``: checks the service's environment against GitHub and Buildkite."""
