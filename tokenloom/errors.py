"""The one exception hierarchy of tokenloom; imports nothing of ours.

TokenloomError                 500 server_error
├── InvalidRequest(param)      400 invalid_request_error
│   ├── ContextOverflow        400 (code context_length_exceeded)
│   └── GrammarError           400 (code invalid_grammar)
├── Unauthorized               401 authentication_error
├── ModelNotFound              404 (code model_not_found)
├── Overloaded(retry_after)    429 / 503 (code server_busy)
├── TemplateError              500, or 400 when the request's data broke the template
├── NotServed                  501 (this server was started without what the endpoint needs)
└── EngineError                500 server_error
"""

from __future__ import annotations


class TokenloomError(Exception):
    """Base of every error that reaches a client as an OpenAI error object."""

    status: int = 500
    type: str = "server_error"
    code: str | None = None

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        if code is not None:
            self.code = code

    def message_naming_param(self) -> str:
        """The message, starting with the field it is about (for APIs whose errors have no `param`)."""
        if self.param and not self.message.startswith(self.param):
            return f"{self.param}: {self.message}"
        return self.message


class InvalidRequest(TokenloomError):
    """The request is wrong; `param` names the offending field (e.g. "messages[1].role")."""

    status = 400
    type = "invalid_request_error"


class ContextOverflow(InvalidRequest):
    """The prompt does not fit in the context window."""

    code = "context_length_exceeded"


class GrammarError(InvalidRequest):
    """A schema, regex or grammar cannot be compiled (unsupported, invalid or too large)."""

    code = "invalid_grammar"


class Unauthorized(TokenloomError):
    """Missing or wrong API key."""

    status = 401
    type = "authentication_error"
    code = "invalid_api_key"


class ModelNotFound(TokenloomError):
    """The request names a model this server does not serve."""

    status = 404
    type = "invalid_request_error"
    code = "model_not_found"


class Overloaded(TokenloomError):
    """Every slot is busy and the queue is full; the client may retry after `retry_after` seconds."""

    status = 429
    type = "server_busy"
    code = "server_busy"

    def __init__(self, message: str, *, retry_after: int = 1, status: int = 429) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status


class TemplateError(TokenloomError):
    """A chat template failed to render or broke a sandbox bound."""

    status = 500
    type = "template_error"

    def __init__(self, message: str, *, param: str | None = None, status: int = 500) -> None:
        super().__init__(message, param=param)
        self.status = status


class NotServed(TokenloomError):
    """The endpoint needs something this server does not run (generation on an --embeddings server)."""

    status = 501
    type = "not_supported_error"


class EngineError(TokenloomError):
    """llama.cpp failed (decode error, out of KV cells, no token allowed by a constraint)."""

    status = 500
    type = "server_error"
