"""What a failed CI job is and what main says of it: failure classes and signatures, main's
history, a PR's builds and failed jobs, verdicts, retries counted per step. Shared by
retry-flaky, landing and red-on-main (none of them imports another for it)."""
