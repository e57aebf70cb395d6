#!/bin/sh
# Re-cut the sandbox's GitHub contract from the pinned Octokit npm packages.
# The packages go to a throw-away directory: node_modules never enters the checkout.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck disable=SC2046  # the package list is meant to split into words
npm install --prefix "$work" --no-audit --no-fund --no-save $(python3 "$here/regenerate.py" --print-packages)
python3 "$here/regenerate.py" "$work/node_modules" --out "$here"
