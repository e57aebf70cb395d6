"""ImageRef.parse: the references the bot probes, and every refusal."""

from __future__ import annotations

import re

import pytest

from bot.registry.reference import (
    BAD_HOST,
    BAD_REPOSITORY,
    BAD_TAG,
    DIGEST_UNSUPPORTED,
    NO_HOST,
    NO_TAG,
    ImageRef,
)


@pytest.mark.parametrize(
    ("image", "host", "repository", "tag"),
    [
        (
            "public.ecr.aws/q9t5s3a7/vllm-ci-postmerge-repo:abc123-cpu",
            "public.ecr.aws",
            "q9t5s3a7/vllm-ci-postmerge-repo",
            "abc123-cpu",
        ),
        ("127.0.0.1:5000/ns/repo:tag", "127.0.0.1:5000", "ns/repo", "tag"),
        ("localhost/repo:v1.2_3", "localhost", "repo", "v1.2_3"),
        (
            "registry.example:443/a.b/c__d/e-f:Latest",
            "registry.example:443",
            "a.b/c__d/e-f",
            "Latest",
        ),
    ],
)
def test_parse_splits_host_repository_and_tag(
    image: str, host: str, repository: str, tag: str
) -> None:
    ref = ImageRef.parse(image)
    assert ref == ImageRef(host, repository, tag)
    assert str(ref) == image


@pytest.mark.parametrize(
    ("image", "message"),
    [
        ("repo:tag", NO_HOST),  # no slash at all
        ("vllm/vllm-openai:latest", NO_HOST),  # Docker Hub's implicit host is not assumed
        ("public.ecr.aws/repo", NO_TAG),
        ("127.0.0.1:5000/ns/repo", NO_TAG),  # the port's colon is not a tag
        ("public.ecr.aws/repo:", BAD_TAG),
        ("public.ecr.aws/repo:-dash-first", BAD_TAG),
        ("public.ecr.aws/repo:" + "t" * 129, BAD_TAG),
        ("public.ecr.aws/Repo:tag", BAD_REPOSITORY),
        ("public.ecr.aws/:tag", BAD_REPOSITORY),
        ("public.ecr.aws/ns//repo:tag", BAD_REPOSITORY),
        ("public.ecr.aws/repo?x=1:tag", BAD_REPOSITORY),
        ("bad_host.example/repo:tag", BAD_HOST),
        ("host.example:port/repo:tag", BAD_HOST),
        ("public.ecr.aws/repo@sha256:" + "0" * 64, DIGEST_UNSUPPORTED),
    ],
)
def test_parse_refuses_with_a_fixed_message(image: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as raised:
        ImageRef.parse(image)
    assert str(raised.value) == message
