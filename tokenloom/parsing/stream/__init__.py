"""Phase two of the auto-parser: a model's output, as it streams, becomes reasoning, content and tool-call
Events, following the structures `parsing.analysis` derived (`output_parser.make_output_parser`)."""
