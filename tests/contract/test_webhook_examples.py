"""The example deliveries the sandbox sends, held to GitHub's webhook schemas."""

from __future__ import annotations

import pytest

from sandbox.contract import Contract, load_webhook_example, webhook_example_names

# What the reference says the bot's handlers need, cut or derived.
REQUIRED_EXAMPLES = {
    "push.branch",
    "pull_request.opened",
    "pull_request.closed",
    "pull_request.merged",
    "pull_request_review.submitted",
    "pull_request_review.approved",
    "pull_request_review.dismissed",
    "issue_comment.created",
    "issue_comment.created_on_pull_request",
    "issue_comment.edited",
    "installation.created",
    "check_run.created",
    "check_run.completed",
}


def _event(name: str) -> str:
    return name.split(".", 1)[0]


def test_the_required_examples_are_present() -> None:
    assert set(webhook_example_names()) >= REQUIRED_EXAMPLES


@pytest.mark.parametrize("name", webhook_example_names())
def test_every_example_validates_against_its_official_schema(contract: Contract, name: str) -> None:
    assert contract.validate_webhook(_event(name), load_webhook_example(name)) == []


def test_the_push_is_to_a_branch() -> None:
    assert load_webhook_example("push.branch")["ref"].startswith("refs/heads/")


@pytest.mark.parametrize("event", ["create", "delete"])
def test_the_ref_events_are_about_a_tag(event: str) -> None:
    assert load_webhook_example(f"{event}.tag")["ref_type"] == "tag"


@pytest.mark.parametrize("action", ["created", "published", "released", "prereleased"])
def test_the_release_examples_carry_their_action(action: str) -> None:
    payload = load_webhook_example(f"release.{action}")
    assert payload["action"] == action
    # Fields today's schema requires and the recordings lacked (see modernize()).
    assert payload["release"]["immutable"] is False
    assert payload["release"]["updated_at"] == payload["release"]["published_at"]
    assert payload["release"]["prerelease"] is (action == "prereleased")


def test_the_merged_variant_looks_merged() -> None:
    closed = load_webhook_example("pull_request.closed")["pull_request"]
    merged = load_webhook_example("pull_request.merged")["pull_request"]
    assert closed["merged"] is False
    assert closed["merged_by"] is None
    assert merged["merged"] is True
    assert merged["merged_at"] == merged["closed_at"]
    assert merged["merged_by"]["login"]
    assert len(merged["merge_commit_sha"]) == 40


def test_the_approved_review_is_approved() -> None:
    assert load_webhook_example("pull_request_review.submitted")["review"]["state"] != "approved"
    assert load_webhook_example("pull_request_review.approved")["review"]["state"] == "approved"


def test_the_dismissed_review_is_dismissed() -> None:
    payload = load_webhook_example("pull_request_review.dismissed")
    assert (payload["action"], payload["review"]["state"]) == ("dismissed", "dismissed")


def test_the_check_run_examples_are_queued_then_concluded() -> None:
    created = load_webhook_example("check_run.created")["check_run"]
    completed = load_webhook_example("check_run.completed")["check_run"]
    assert (created["status"], created["conclusion"]) == ("queued", None)
    assert completed["status"] == "completed"
    assert completed["conclusion"] is not None


def test_a_comment_on_a_pr_carries_issue_pull_request() -> None:
    assert "pull_request" not in load_webhook_example("issue_comment.created")["issue"]
    issue = load_webhook_example("issue_comment.created_on_pull_request")["issue"]
    links = issue["pull_request"]
    assert set(links) == {"url", "html_url", "diff_url", "patch_url", "merged_at"}
    assert links["url"].endswith(f"/pulls/{issue['number']}")
    assert links["diff_url"] == links["html_url"] + ".diff"


def test_a_missing_required_field_is_reported(contract: Contract) -> None:
    payload = load_webhook_example("pull_request.opened")
    del payload["pull_request"]["head"]
    assert contract.validate_webhook("pull_request", payload) == [
        "webhook pull_request.opened: $.pull_request: 'head' is a required property"
    ]


def test_a_wrong_type_is_reported(contract: Contract) -> None:
    payload = load_webhook_example("issue_comment.created")
    payload["comment"]["id"] = "1"
    payload["issue"]["number"] = None
    problems = contract.validate_webhook("issue_comment", payload)
    assert (
        problems[0] == "webhook issue_comment.created: $.comment.id: '1' is not of type 'integer'"
    )
    # The issue schema is an allOf of two parts that both type "number": said once.
    assert problems[1:] == [
        "webhook issue_comment.created: $.issue.number: None for not nullable",
        "webhook issue_comment.created: $.issue.number: None is not of type 'integer'",
    ]


def test_a_badly_formatted_timestamp_is_reported(contract: Contract) -> None:
    payload = load_webhook_example("push.branch")
    payload["head_commit"]["timestamp"] = "2019-05-15 15:20:30"
    assert contract.validate_webhook("push", payload) == [
        "webhook push: $.head_commit.timestamp: '2019-05-15 15:20:30' is not a 'date-time'"
    ]


@pytest.mark.parametrize(
    ("event", "action", "schema"),
    [
        ("pull_request", "assigned", "webhook-pull-request-assigned"),
        ("deployment", None, "webhook-deployment"),
        ("check_suite", "completed", "webhook-check-suite-completed"),
    ],
)
def test_an_event_outside_the_subset_is_reported(
    contract: Contract, event: str, action: str | None, schema: str
) -> None:
    payload: dict[str, object] = {} if action is None else {"action": action}
    (problem,) = contract.validate_webhook(event, payload)
    assert f"schema {schema!r} is not in the contract subset" in problem


def test_examples_are_fresh_copies() -> None:
    first = load_webhook_example("pull_request.opened")
    first["pull_request"]["title"] = "changed"
    assert load_webhook_example("pull_request.opened")["pull_request"]["title"] != "changed"


def test_an_unknown_example_name_lists_the_known_ones() -> None:
    with pytest.raises(KeyError, match=r"pull_request\.opened"):
        load_webhook_example("pull_request.teleported")
