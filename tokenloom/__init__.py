"""tokenloom: a local LLM server for GGUF models on llama.cpp."""

__version__ = "0.1.0"
