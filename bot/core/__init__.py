"""The foundation: what every layer may use; imports nothing else of the bot."""
