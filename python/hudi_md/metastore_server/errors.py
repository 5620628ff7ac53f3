"""The server's one error type: an HTTP status, the protocol's error code and a message, answered as
``{"error": {"code", "message"}}`` (``hudi_md.metastore.protocol.ErrorResponse``)."""

from __future__ import annotations

from hudi_md.metastore.protocol import ErrorCode


class ApiError(Exception):
    def __init__(self, status: int, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def invalid(message: str) -> ApiError:
    return ApiError(400, ErrorCode.invalid, message)


def not_found(message: str) -> ApiError:
    return ApiError(404, ErrorCode.not_found, message)


def exists(message: str) -> ApiError:
    return ApiError(409, ErrorCode.exists, message)


def conflict(message: str) -> ApiError:
    return ApiError(409, ErrorCode.conflict, message)


def unauthorized(message: str) -> ApiError:
    return ApiError(401, ErrorCode.unauthorized, message)
