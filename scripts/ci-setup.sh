#!/usr/bin/env bash
# ci-setup.sh installs the system packages the test suite needs that Go
# cannot fetch by itself. It is idempotent: each step is skipped when its
# tool is already there, and it fails loudly (non-zero) when an install fails.
#
#   - chromium (Debian's package) for the GraphiQL browser test
#     (e2e/browser_test.go drives /usr/bin/chromium headless through chromedp).
#   - node and npm, and the pinned graphql-sse client (scripts/install-nodeclient.sh)
#     for gateway/nodeclient_test.go.
#   - the pinned supergraph packages (scripts/install-federation.sh) for
#     e2e/federation_test.go.
set -euo pipefail

# The pinned Go tools (staticcheck; kubeconform, kustomize and helm) are
# compiled from the module proxy: on a cold 2-core machine helm alone takes
# about 4.5 minutes of CPU. They build in the background while apt and npm
# below wait on the network, and are waited for before the deploy tools'
# other installs (which then find them in place).
go_tools_log=$(mktemp)
(
	"$(dirname "$0")/staticcheck.sh" --install-tools &&
		"$(dirname "$0")/check-deploy.sh" --install-go-tools
) >"$go_tools_log" 2>&1 &
go_tools_pid=$!
wait_go_tools() {
	if ! wait "$go_tools_pid"; then
		cat "$go_tools_log" >&2
		echo "ci-setup: building the pinned Go tools failed" >&2
		exit 1
	fi
	cat "$go_tools_log" >&2
	rm -f "$go_tools_log"
}

apt_updated=0
apt_install() {
	if [[ $(id -u) -ne 0 ]]; then
		if command -v sudo >/dev/null 2>&1; then
			SUDO=(sudo)
		else
			echo "ci-setup: need root (or sudo) to install: $*" >&2
			exit 1
		fi
	else
		SUDO=()
	fi
	export DEBIAN_FRONTEND=noninteractive
	if [[ $apt_updated -eq 0 ]]; then
		"${SUDO[@]}" apt-get update
		apt_updated=1
	fi
	"${SUDO[@]}" apt-get install -y --no-install-recommends "$@"
}

# Chromium for e2e/browser_test.go (fonts-liberation gives the screenshots
# readable text without pulling in a desktop's worth of recommends).
if [[ ! -x /usr/bin/chromium ]]; then
	echo "ci-setup: installing chromium" >&2
	apt_install chromium fonts-liberation
	if [[ ! -x /usr/bin/chromium ]]; then
		echo "ci-setup: chromium install finished but /usr/bin/chromium is missing" >&2
		exit 1
	fi
fi
/usr/bin/chromium --version >&2 || { echo "ci-setup: /usr/bin/chromium does not run" >&2; exit 1; }

# redis-server (Debian's package) for the shared APQ store's tests
# (apqstore/redis_test.go, e2e/replicas_test.go start it on a free loopback
# port themselves; no service is enabled or started here).
if ! command -v redis-server >/dev/null 2>&1; then
	echo "ci-setup: installing redis-server" >&2
	apt_install redis-server
	command -v redis-server >/dev/null 2>&1 || { echo "ci-setup: redis-server install finished but it is missing" >&2; exit 1; }
fi
redis-server --version >&2 || { echo "ci-setup: redis-server does not run" >&2; exit 1; }

# Deployment checks' tools (scripts/check-deploy.sh pins them): kubeconform,
# kustomize and helm from the Go module proxy, dockerfile-utils from npm,
# promtool unpacked from Debian's prometheus package (no service).
# (The Go tools were started at the top; wait for them here.)
# hadolint is not installed: it is in neither Debian bookworm, the Go
# module proxy nor npm (npm's "hadolint" is only a wrapper around a binary
# it does not ship), so the Dockerfile is linted by dockerfile-utils and
# its policy asserted by deploy/deploy_test.go instead.
wait_go_tools
"$(dirname "$0")/check-deploy.sh" --install-tools

# staticcheck, pinned in scripts/staticcheck.sh, into the same tools cache
# (built above with the others; this only checks its version).
"$(dirname "$0")/staticcheck.sh" --install-tools

# Node and the npm packages of the third-party client tests
# (e2e/clients_test.go: graphql-http's server audit, Apollo Client 4),
# pinned exactly in e2e/clients/package-lock.json. Debian's nodejs and npm
# when node is missing; npm ci installs exactly the lock file. Then the
# pinned graphql-sse client for gateway/nodeclient_test.go.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "ci-setup: installing nodejs and npm" >&2
	apt_install nodejs npm
fi
node --version >&2 || { echo "ci-setup: node does not run" >&2; exit 1; }
clients="$(cd "$(dirname "$0")/../e2e/clients" && pwd)"
echo "ci-setup: npm ci in $clients" >&2
(cd "$clients" && npm ci --no-audit --no-fund) || { echo "ci-setup: npm ci in e2e/clients failed" >&2; exit 1; }
[[ -d "$clients/node_modules/graphql-http" ]] || { echo "ci-setup: e2e/clients/node_modules/graphql-http is missing after npm ci" >&2; exit 1; }
"$(dirname "$0")/install-nodeclient.sh"
"$(dirname "$0")/install-federation.sh"
