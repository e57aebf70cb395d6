"""The status page (``GET /status``): what the bot has recorded, as HTML for a browser.

``model`` is the plain data, ``read`` gathers it from the store (through the dashboard's
readers, with ``pins``, ``activity`` and ``service``), ``render`` makes the page (with
``render_service``, ``render_parts`` and ``links``; ``pages`` the sign-in and outage
pages), and ``route`` serves it behind the optional token (``login``). docs/status.md
says what it shows.
"""
