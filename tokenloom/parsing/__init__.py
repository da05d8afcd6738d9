"""parsing package."""
