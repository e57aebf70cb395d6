"""Container registries: whether an image tag exists, asked over the OCI distribution API.

The bot checks tags (CI images built per commit) before it proposes or lands a change
that refers to them. ``client`` holds the one request it needs (a manifest ``HEAD``),
following the registry's own auth challenge; ``reference``, ``challenge``, ``tokens`` and
``probe`` are its pure parts: image references, ``WWW-Authenticate`` parsing, bearer
tokens kept until they expire, and what one probe found.
"""
