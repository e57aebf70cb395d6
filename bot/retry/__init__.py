"""retry-flaky: classifying failures, main-branch history, the flow and its report."""
