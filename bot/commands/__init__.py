"""PR comment commands: the one dispatcher that answers a comment (``flow``), above the
features whose commands it runs (pins, retry-flaky, why-red)."""
