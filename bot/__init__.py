"""followup-bot: the follow-up work of vLLM's CI migrations, as a GitHub App."""
