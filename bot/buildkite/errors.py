"""What Buildkite's client raises beyond the service's own errors: a refused request
(`BuildkiteError`, with Buildkite's message), a job that cannot be retried
(`JobNotRetryable`) and an artifact over the caller's cap (`ArtifactTooLarge`)."""

from __future__ import annotations

from bot.core.errors import PermanentError

CLIENT_ERROR = "Buildkite answered {status} to {request}: {message}"
ARTIFACT_TOO_LARGE = "artifact {url} is larger than {max_bytes} bytes"


class BuildkiteError(PermanentError):
    """Buildkite refused a request (a 4xx other than 429); ``message`` is its own words."""

    def __init__(self, status: int, message: str, *, request: str = "") -> None:
        shown = request or "a request"
        super().__init__(CLIENT_ERROR.format(status=status, request=shown, message=message))
        self.status = status
        self.message = message


class JobNotRetryable(BuildkiteError):
    """The job cannot be retried: already retried once, or not failed/timed out/canceled."""


class ArtifactTooLarge(PermanentError):
    """An artifact exceeded the caller's size cap; nothing beyond the cap was buffered."""

    def __init__(self, url: str, max_bytes: int) -> None:
        super().__init__(ARTIFACT_TOO_LARGE.format(url=url, max_bytes=max_bytes))
        self.url = url
        self.max_bytes = max_bytes
