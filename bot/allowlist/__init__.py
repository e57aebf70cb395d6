"""The allowlist follow-up: audit evidence turned into a pruning commit or PR."""
