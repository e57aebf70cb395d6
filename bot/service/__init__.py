"""The webhook service: app, settings, intake, inbox, dispatch, reconcile."""
