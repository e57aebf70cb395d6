"""The status page (``GET /status``): what the bot has recorded, as HTML for a browser.

``model`` is the plain data, ``read`` gathers it from the store (through the dashboard's
readers), ``render`` makes the page and ``route`` serves it behind the optional token.
"""
