"""The faults of referee, as one exception tree shared by the server and the SDK.

    RefereeError
    ├── TransportError            the request did not get an answer (connection refused, reset)
    │   └── RequestTimeout        no answer within the client's timeout
    └── APIError                  the server answered with a problem (application/problem+json)
        ├── InvalidRequest        400/422: the request is malformed or fails validation
        ├── Unauthorized          401: missing or unknown API key
        ├── NotFound              404: no such route or resource
        │   └── MethodNotAllowed  405: the route exists, not for this method
        ├── Conflict              409: the id is taken by a different request
        ├── PayloadTooLarge       413: too many items or too large a body
        ├── TooManyRequests       429: every sandbox slot is busy; retry after a moment
        ├── ServiceUnavailable    503: a component is not available (or the queue is full)
        ├── GatewayTimeout        504: no sandbox slot came free within the wait allowed
        └── InternalServerError   500: a bug in referee (never the caller's fault)

A wrong or unparseable *answer* is not a fault: it is a result (score 0 with an outcome).
The server renders an APIError as ``{"type", "title", "status", "detail", "errors"?}``; the SDK
maps ``type`` back to the same class with :func:`error_for_problem`.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "APIError",
    "Conflict",
    "GatewayTimeout",
    "InternalServerError",
    "InvalidRequest",
    "MethodNotAllowed",
    "NotFound",
    "PayloadTooLarge",
    "RefereeError",
    "RequestTimeout",
    "ServiceUnavailable",
    "TooManyRequests",
    "TransportError",
    "Unauthorized",
    "error_for_problem",
]


class RefereeError(Exception):
    """Base of every error referee raises."""


class TransportError(RefereeError):
    """The request got no answer from the server."""


class RequestTimeout(TransportError):
    """The server did not answer within the timeout."""


class APIError(RefereeError):
    """The server answered with a problem document."""

    status: ClassVar[int] = 500
    type: ClassVar[str] = "internal-error"
    title: ClassVar[str] = "Internal server error"
    retry_after_s: float | None = None
    """Seconds the server asks the client to wait before retrying (its ``Retry-After``)."""

    def __init__(
        self,
        detail: str,
        *,
        errors: list[dict[str, Any]] | None = None,
        status: int | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.errors = errors or []
        if retry_after_s is not None:
            self.retry_after_s = retry_after_s
        if status is not None:
            self.status_code = status
        else:
            self.status_code = type(self).status

    def __init_subclass__(
        cls,
        *,
        status: int | None = None,
        type: str | None = None,
        title: str | None = None,
        **kwargs: Any,
    ) -> None:
        """A problem class names its HTTP status, its ``type`` (the name on the wire, which
        :func:`error_for_problem` maps back) and its ``title`` as class keywords; one that
        leaves them out keeps its parent's."""
        super().__init_subclass__(**kwargs)
        if status is not None:
            cls.status = status
        if type is not None:
            cls.type = type
        if title is not None:
            cls.title = title

    def to_problem(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "type": self.type,
            "title": self.title,
            "status": self.status_code,
            "detail": self.detail,
        }
        if self.errors:
            body["errors"] = self.errors
        return body


class InvalidRequest(APIError, status=422, type="invalid-request", title="The request is invalid"):
    """400/422: the request is malformed or fails validation."""


class Unauthorized(APIError, status=401, type="unauthorized", title="Missing or unknown API key"):
    """401 (and 403): missing or unknown API key."""


class NotFound(APIError, status=404, type="not-found", title="Not found"):
    """404: no such route or resource."""


class MethodNotAllowed(NotFound, status=405, type="method-not-allowed", title="Method not allowed"):
    """405: the route exists but not for this method (the ``Allow`` header lists them); a
    :class:`NotFound`, so code that caught a 405 as one still does."""


class Conflict(APIError, status=409, type="conflict", title="Conflict"):
    """409: the id is taken by a different request."""


class PayloadTooLarge(
    APIError, status=413, type="payload-too-large", title="The request is too large"
):
    """413: too many items or too large a body."""


class TooManyRequests(APIError, status=429, type="too-many-requests", title="Too many requests"):
    """The server is at capacity (every sandbox slot busy). Sent with ``Retry-After``."""

    retry_after_s: float = 1.0


class ServiceUnavailable(
    APIError, status=503, type="service-unavailable", title="Service unavailable"
):
    """A component is not available; with ``Retry-After`` when waiting helps (a full queue)."""


class GatewayTimeout(
    APIError, status=504, type="gateway-timeout", title="No sandbox slot came free in time"
):
    """A single run waited its longest for a free sandbox slot. Sent with ``Retry-After``."""


class InternalServerError(
    APIError, status=500, type="internal-error", title="Internal server error"
):
    """500: a bug in referee (never the caller's fault)."""


_BY_TYPE: dict[str, type[APIError]] = {
    cls.type: cls
    for cls in (
        InvalidRequest,
        Unauthorized,
        NotFound,
        MethodNotAllowed,
        Conflict,
        PayloadTooLarge,
        TooManyRequests,
        ServiceUnavailable,
        GatewayTimeout,
        InternalServerError,
    )
}
_BY_STATUS: dict[int, type[APIError]] = {
    400: InvalidRequest,
    401: Unauthorized,
    403: Unauthorized,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    413: PayloadTooLarge,
    422: InvalidRequest,
    429: TooManyRequests,
    503: ServiceUnavailable,
    504: GatewayTimeout,
}


def error_for_problem(status: int, body: Any) -> APIError:
    """The exception for an error response (a problem document, or anything else)."""
    if isinstance(body, dict):
        cls = _BY_TYPE.get(str(body.get("type")), _BY_STATUS.get(status, InternalServerError))
        detail = str(body.get("detail") or body.get("title") or f"HTTP {status}")
        errors = body.get("errors") if isinstance(body.get("errors"), list) else None
        return cls(detail, errors=errors, status=status)
    cls = _BY_STATUS.get(status, InternalServerError)
    return cls(f"HTTP {status}: {str(body)[:500]}", status=status)
