"""PR comment commands' grammar and the one reply per command, shared by every feature that
answers a command; the dispatcher that runs them is ``bot.commands``."""
