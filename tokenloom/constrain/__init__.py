"""constrain package."""
