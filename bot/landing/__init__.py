"""Landing approved bump PRs: rules, flow and what the bot says."""
