"""The "CI routing" check run on PRs (the routing model itself is ``bot.routing``)."""
