"""The auto-parser: `analysis/` reads a chat template, `stream/` parses a model's output with what it found.
The modules here (`structures`, `markers`, `arguments`, `tagged`) are the vocabulary both halves share."""
