#!/usr/bin/env bash
# staticcheck.sh runs staticcheck (honnef.co/go/tools) over every package,
# tests included, and fails on any finding: bugs, deprecated calls, unused
# code, style (error strings, doc comments). It is installed at a pinned
# version into the tools cache like check-deploy.sh's tools (go-tools.sh).
# A finding that is deliberate is silenced where it stands, with its reason:
# //lint:ignore CHECK reason.
#   --install-tools   only install it (scripts/ci-setup.sh calls this)
set -euo pipefail
cd "$(dirname "$0")/.."

# v0.8.2 is the newest release and builds with this Go (1.26).
STATICCHECK_VERSION=v0.8.2

say() { echo "staticcheck: $*" >&2; }
die() { say "FAILED: $*"; exit 1; }
# shellcheck source=scripts/go-tools.sh
. scripts/go-tools.sh # TOOLS, install_go_tool

install_go_tool staticcheck honnef.co/go/tools/cmd/staticcheck "$STATICCHECK_VERSION"
if [[ ${1:-} == --install-tools ]]; then
	exit 0
fi
"$TOOLS/bin/staticcheck" ./... || die "staticcheck ./... reported the findings above"
