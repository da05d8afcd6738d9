"""harmony package."""
