"""A pure model of how vLLM's pipeline generator routes CI steps (queues, plugins, images).

No I/O: callers pass the files' text. See ``bot.routing.model.route``.
"""
