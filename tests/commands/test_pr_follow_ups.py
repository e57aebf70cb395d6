"""Follow-ups about one PR run under the PR's subject: the one its comments run under."""

from __future__ import annotations

import json

from bot.context.followups import LANDING_EVENT, RETRY_OUTCOMES_EVENT, pr_delivery
from bot.core.sources import Source, routed_event
from bot.core.subjects import github_subject


def test_a_pr_follow_up_shares_the_subject_of_the_prs_comments() -> None:
    comment = {"repository": {"full_name": "vllm-project/vLLM"}, "issue": {"number": 7}}
    for event in (RETRY_OUTCOMES_EVENT, LANDING_EVENT):
        delivery = pr_delivery("parent/x", event, "VLLM-project/vllm", 7, 1.0, {"why": "status"})
        assert delivery.subject == github_subject("issue_comment", comment)
        assert delivery.source == Source.INTERNAL
        assert routed_event(Source.INTERNAL, event) == event
        assert routed_event(Source.GITHUB, event) is None  # nobody outside can say it
        assert json.loads(delivery.payload) == {
            "repository": {"full_name": "VLLM-project/vllm"},
            "pull_request": {"number": 7},
            "why": "status",
        }
