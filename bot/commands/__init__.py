"""PR comment commands: the grammar the bot answers."""
