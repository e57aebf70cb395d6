"""The repository config (``.github/followup-bot.yml``): schema and loading."""
