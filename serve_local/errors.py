"""Errors the server turns into OpenAI-shaped bodies.

APIError                      any failure answered with {"error": {...}}
├── InvalidRequest   (400)    the request is wrong; the message says how to fix it
├── ModelNotFound    (404)    the request names a model this server does not serve
└── ScriptedFault    (any)    a fault the scripted provider was told to produce
"""

from __future__ import annotations

from typing import Any


class APIError(Exception):
    status_code = 500
    error_type = "server_error"

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        status_code: int | None = None,
        error_type: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code
        if status_code is not None:
            self.status_code = status_code
        if error_type is not None:
            self.error_type = error_type
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.error_type,
                "param": self.param,
                "code": self.code,
            }
        }


class InvalidRequest(APIError):
    status_code = 400
    error_type = "invalid_request_error"


class ModelNotFound(APIError):
    status_code = 404
    error_type = "invalid_request_error"

    def __init__(self, message: str) -> None:
        super().__init__(message, param="model", code="model_not_found")


class ScriptedFault(APIError):
    """A fault produced on purpose by a scripted scenario (429, 500, ...)."""


class StartupError(RuntimeError):
    """The server cannot start as asked (missing weights, no such device, ...)."""
