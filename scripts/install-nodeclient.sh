#!/usr/bin/env bash
# install-nodeclient.sh installs the pinned Node client library
# (graphql-sse, gateway/testdata/nodeclient/package-lock.json) that
# gateway/nodeclient_test.go drives against the gateway. Idempotent; needs
# node and npm (Debian's nodejs and npm packages).
set -euo pipefail
cd "$(dirname "$0")/../gateway/testdata/nodeclient"
if [[ -d node_modules/graphql-sse ]]; then
	exit 0
fi
npm ci --no-audit --no-fund --ignore-scripts
