"""Phase one of the auto-parser: a chat template, rendered with probes, tells how its model writes reasoning,
content and tool calls (`analyze`), and what grammar forces those calls (`tool_grammar`).

May use `parsing.stream` to check that what it derived parses the template's own renderings; the stream
side never imports this package."""
