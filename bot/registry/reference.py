"""An image reference such as ``public.ecr.aws/q9t5s3a7/vllm-ci-postmerge-repo:abc123-cpu``.

Only the form the bot needs: an explicit registry host (Docker Hub's implicit
``docker.io/library/`` is never assumed, so a typo cannot send a probe to another
registry) and a tag. The repository and tag are checked against the distribution
grammar because both go into a URL path: anything else could change which URL is asked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Lower-case path components joined by ".", "_", "__" or runs of "-", separated by "/".
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_REPOSITORY = re.compile(rf"{_COMPONENT}(?:/{_COMPONENT})*")
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?(?::[0-9]{1,5})?")

NO_HOST = "an image reference needs a registry host: host/repository:tag"
NO_TAG = "an image reference needs a tag: host/repository:tag"
BAD_HOST = "not a registry host (host or host:port)"
BAD_REPOSITORY = "not a repository name (lower-case letters, digits, '.', '_', '-', '/')"
BAD_TAG = "not a tag (letters, digits, '_', '.', '-'; at most 128)"
DIGEST_UNSUPPORTED = "image references by digest (@sha256:...) are not supported"


def _is_host(part: str) -> bool:
    """Docker's rule: a first component is a host when it has a dot or a port, or is localhost."""
    return "." in part or ":" in part or part == "localhost"


@dataclass(frozen=True)
class ImageRef:
    """A tag of a repository on one registry; ``str()`` gives the reference back."""

    host: str
    repository: str
    tag: str

    @classmethod
    def parse(cls, image: str) -> ImageRef:
        """``host[:port]/repository:tag``; ``ValueError`` with one of this module's messages."""
        if "@" in image:
            raise ValueError(DIGEST_UNSUPPORTED)
        host, slash, rest = image.partition("/")
        if not slash or not _is_host(host):
            raise ValueError(NO_HOST)
        # The tag's colon is the last one after the last slash (a host's port comes before).
        repository, colon, tag = rest.rpartition(":")
        if not colon or "/" in tag:
            raise ValueError(NO_TAG)
        if _HOST.fullmatch(host) is None:
            raise ValueError(BAD_HOST)
        if _REPOSITORY.fullmatch(repository) is None:
            raise ValueError(BAD_REPOSITORY)
        if _TAG.fullmatch(tag) is None:
            raise ValueError(BAD_TAG)
        return cls(host, repository, tag)

    def __str__(self) -> str:
        return f"{self.host}/{self.repository}:{self.tag}"
