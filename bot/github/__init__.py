"""GitHub: the App client, authentication, commits and PR upserts, exactly-once effects."""
