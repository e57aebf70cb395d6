"""What one delivery's handlers are given: the services, a repository's scope and config,
follow-up deliveries, handler ids. Above the shared core, below the features."""
