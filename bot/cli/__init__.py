"""The command-line entry points (``followup-bot ...``)."""
