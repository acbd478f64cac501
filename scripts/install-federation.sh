#!/usr/bin/env bash
# install-federation.sh installs the pinned supergraph packages
# (e2e/federation/package-lock.json: @apollo/gateway, @apollo/server,
# @apollo/subgraph, @theguild/federation-composition) that
# e2e/federation_test.go composes and serves in front of paygraph's
# subgraph mode. Idempotent; needs node and npm (Debian's nodejs and npm).
set -euo pipefail
cd "$(dirname "$0")/../e2e/federation"
if [[ -d node_modules/@apollo/gateway && -d node_modules/@theguild/federation-composition ]]; then
	exit 0
fi
npm ci --no-audit --no-fund --ignore-scripts
[[ -d node_modules/@apollo/gateway ]] || { echo "install-federation: @apollo/gateway is missing after npm ci" >&2; exit 1; }
