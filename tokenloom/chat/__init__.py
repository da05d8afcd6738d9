"""Chat-template rendering: untrusted Jinja templates in a sandbox, capabilities, fallbacks."""
