"""When a step goes red on main: signals, the culprit, the follow-ups."""
