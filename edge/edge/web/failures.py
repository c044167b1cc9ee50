"""Failed backend calls as clear page messages: the service's own words for expected errors,
a plain apology otherwise. Never a stack trace."""

from __future__ import annotations

import math
from collections.abc import Container, Iterator
from contextlib import contextmanager

import grpc

from storypost_runtime.logs import get_logger
from storypost_runtime.status import details_from

log = get_logger(__name__)
UNAVAILABLE = "A service is briefly unavailable. Please try again in a moment."
INTERNAL = "Something went wrong on our side. Please try again later."
# account-svc's reason when a member asks for what only a workspace admin may do.
NOT_WORKSPACE_ADMIN = "NOT_WORKSPACE_ADMIN"
EXPECTED = (
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.ALREADY_EXISTS,
    grpc.StatusCode.OUT_OF_RANGE,
)


class PageError(Exception):
    """An answer other than the page: its status, a title and a sentence for people."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        title: str = "",
        retry_after: int | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.title = title or TITLES.get(status, "Something went wrong")
        self.retry_after = retry_after
        self.reason = reason


TITLES = {
    400: "That did not work",
    401: "Please sign in",
    403: "This form has expired",
    404: "Not found",
    429: "Please slow down",
    503: "Please try again in a moment",
}


def sentence(text: str) -> str:
    """The service's message as a sentence: capital first letter, final full stop."""
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def page_error(error: grpc.RpcError, *, what: str = "") -> PageError:
    """Maps a failed call. `what` names the thing for NOT_FOUND ("This draft")."""
    details = details_from(error)
    code = details.code
    if code in EXPECTED:
        return PageError(400, sentence(details.message), reason=details.reason)
    if code == grpc.StatusCode.NOT_FOUND:
        message = f"{what} was not found." if what else sentence(details.message)
        return PageError(404, message, reason=details.reason)
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        wait = details.retry_after_seconds
        retry = max(1, math.ceil(wait)) if wait is not None else None
        return PageError(429, sentence(details.message), retry_after=retry, reason=details.reason)
    if code == grpc.StatusCode.PERMISSION_DENIED and details.reason == NOT_WORKSPACE_ADMIN:
        return PageError(403, sentence(details.message), title="Admins only", reason=details.reason)
    if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
        return PageError(401, "Please sign in again.")
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return PageError(503, UNAVAILABLE, retry_after=5)
    log.warning("app call failed", code=code.name, message=details.message)
    return PageError(500, INTERNAL)


@contextmanager
def page_errors(what: str = "") -> Iterator[None]:
    """A backend call that fails inside the block is the error page (`page_error`)."""
    try:
        yield
    except grpc.RpcError as error:
        raise page_error(error, what=what) from None


def refusal(error: grpc.RpcError, *, what: str = "", shown: Container[int] = (400,)) -> PageError:
    """A call the service refused with one of the `shown` statuses, as the page message the
    caller shows; any other failure is raised as the error page."""
    failure = page_error(error, what=what)
    if failure.status not in shown:
        raise failure from None
    return failure
