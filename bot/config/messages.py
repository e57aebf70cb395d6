"""Every text the config checks print (tests assert these exact texts)."""

from __future__ import annotations

# The file as a whole
MSG_TOO_LARGE = "config is larger than the limit of {limit} bytes"
MSG_NOT_UTF8 = "config is not valid UTF-8: {reason}"
MSG_EMPTY_CONFIG = "empty config"
MSG_YAML_SYNTAX = "YAML syntax error: {problem}"
MSG_TOO_DEEP = "nested too deeply (more than {limit} levels)"
MSG_TOO_MANY_VALUES = "too many values (more than {limit}, after expanding aliases)"
MSG_TOP_NOT_MAPPING = "the top level must be a mapping, got {kind}"

# YAML that is valid but not a config
MSG_DUPLICATE_KEY = "duplicate key {key!r} (first at line {line})"
MSG_KEY_NOT_STRING = "keys must be plain strings, got {kind}"
MSG_UNSUPPORTED_TAG = "unsupported YAML tag {tag!r}"
MSG_BAD_SCALAR = "cannot read {raw!r}: {reason}"

# Keys and types
MSG_UNKNOWN_KEY = "unknown key {key!r}"
MSG_DID_YOU_MEAN = " (did you mean {suggestion!r}?)"
MSG_MISSING = "required key is missing"
MSG_WRONG_TYPE = "expected {expected}, got {kind}"
MSG_QUOTE_HINT = " (put it in quotes to keep it as text)"
MSG_NOT_ONE_OF = "must be one of {choices}, got {kind}"
MSG_TOO_SHORT = "must list at least {items}"

# Values
MSG_EMPTY = "must not be empty"
MSG_BAD_PIN_NAME = (
    "invalid pin name {value!r}: use letters, digits, '.', '_' and '-', "
    "starting with a letter or digit"
)
MSG_PIN_NAME_NOT_A_REF = (
    "invalid pin name {value!r}: a git branch name cannot contain '..' or end with '.' or '.lock'"
)
MSG_BAD_UPSTREAM = "expected 'owner/repo', got {value!r}"
MSG_BAD_BRANCH = "invalid branch name {value!r}: {reason}"
MSG_ABSOLUTE_PATH = "must be relative to the repository root, got {value!r}"
MSG_PARENT_PATH = "must not contain '..', got {value!r}"
# Paths from the config end up in GitHub API URLs (the contents API) and globs in PR
# comments, so both are held to a small, URL-inert grammar (see docs/configuration.md).
MAX_PATH_LENGTH = 255
_PATH_NAMES = (
    "names made of ASCII letters, digits, '.', '_', '-', '+' and '@', joined by single '/', "
    f"none of them '.' or '..', at most {MAX_PATH_LENGTH} characters in all"
)
REPO_PATH_RULE = f"a file path is relative to the repository root: {_PATH_NAMES}"
PATH_GLOB_RULE = (
    f"a path glob is written like a file path ({_PATH_NAMES}) "
    "and may also use '*', '?', '[', ']' and '!'"
)
MSG_PATH_CHARACTER = "must not contain {char}, got {value!r} ({rule})"
MSG_PATH_NOT_NORMAL = "must not contain {what}, got {value!r} ({rule})"
MSG_PATH_TOO_LONG = "must be at most {limit} characters long, got {length} ({rule})"
MSG_BAD_DEPENDENCY = "invalid FetchContent name {value!r}: use letters, digits, '_', '.', '+', '-'"
MSG_BAD_IDENTIFIER = "{value!r} is not a Python variable name"
MSG_BAD_HANDLE = "invalid handle {value!r}: use letters, digits and '-'"
MSG_BAD_SLUG = "invalid Buildkite slug {value!r}: use letters, digits, '_', '.' and '-'"
MSG_HAS_WHITESPACE = "must not contain whitespace, got {value!r}"
MSG_LABEL_TOO_LONG = "label {value!r} is longer than {limit} characters"
MSG_OUT_OF_RANGE = "{value} is outside {low}..{high}"
MSG_BAD_REGEX = "invalid regular expression {value!r}: {reason}"
MSG_BAD_URL = "expected an http(s) URL, got {value!r}"
MSG_BAD_COMPANION_VARIABLE = (
    "invalid variable {value!r}: a name (letters, digits, '_'), or for YAML a key path "
    "of such names joined by '.'"
)
MSG_PATTERN_GROUPS = "the pattern must have exactly one group (the value), it has {count}"
MSG_COMPANION_ONE_OF = "give exactly one of variable and pattern"
MSG_COMPANION_FORMAT_UNKNOWN = (
    "cannot tell the format of {file} from its name: add format (shell, cmake, python or yaml)"
)
MSG_COMPANION_FORMAT_WITH_PATTERN = "format is for variable; a pattern reads any file"
MSG_COMPANION_KEY_PATH = "a key path ('a.b') is for YAML files; {format} names a variable"
MSG_URL_NO_COMMIT = "the URL template must contain {{commit}}, got {value!r}"

# Rules across items and sections
MSG_DUPLICATE_PIN = "duplicate pin name {name!r} (first at pins[{index}])"
MSG_RETRY_NEEDS_BUILDKITE = (
    "retry needs a buildkite section: retry-flaky and landing retry Buildkite jobs"
)
MSG_MAIN_RED_NEEDS_BUILDKITE = (
    "main_red needs a buildkite section: main's signals are its Buildkite builds"
)
MSG_MAIN_RED_UNKNOWN_PIPELINE = "{pipeline!r} is not in buildkite.pipelines"
MSG_ALLOWLIST_NEEDS_EVIDENCE = (
    "allowlist needs a buildkite section (its evidence is the audit job's log) "
    "or allowlist.wheel_url (the bot audits the wheel itself)"
)
# The pin's own file needs no entry: every literal of the value in it changes with the pin.
MSG_COMPANION_IS_PIN_FILE = (
    "{file} is the pin's own file: the bot already changes every literal of the pinned "
    "value in it (a set() repeating GIT_TAG's tag too); list other files under also"
)
MSG_DUPLICATE_MIGRATION = "duplicate migration name {name!r} (first at migrations[{index}])"
MSG_DUPLICATE_DEPENDENCY = "pins[{index}] already follows {dependency!r} in {file}"

# followup-bot check-config
MSG_CHECK_OK = "ok: {summary}"
MSG_CHECK_FAILED = "{problems} in {file}"
MSG_CANNOT_READ = "error: cannot read {file}: {reason}"
MSG_CHECKOUT_OK = "ok: {pins} found as configured in the checkout"
MSG_CHECKOUT_FAILED = "{problems} in the checkout"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")
