"""Webhook handlers, one module per feature; each exports a gidgethub ``Router``."""
