"""Durable storage: the protocol, the SQLite backend, state documents, retention."""
