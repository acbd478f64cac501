#!/usr/bin/env bash
# The project's one test command (docs/testing.md; .ci/run calls exactly
# this). It installs what the tests need, checks formatting, vet and that
# gqlgen's output is up to date, then runs every test with the race
# detector. gofmt, vet and staticcheck must report nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
# Tests that need an installed tool (chromium, redis-server) skip in a bare
# `go test` on a laptop, but fail loudly here, where ci-setup installs them.
export CI="${CI:-true}"

if [ -x scripts/ci-setup.sh ]; then
  scripts/ci-setup.sh
fi

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== staticcheck (pinned in scripts/staticcheck.sh; no finding passes)"
scripts/staticcheck.sh

echo "== gqlgen output is up to date"
# (the state includes the diff itself, so that a file already edited
# before the run and changed again by it is noticed too)
gqlstate() { { git status --porcelain -- graph gqlgen.yml; git diff -- graph; } 2>/dev/null | sha256sum; }
before=$(gqlstate)
go run ./graph/gen # gqlgen's generate, plus graph/lists.go's list marshalling
after=$(gqlstate)
if [ "$before" != "$after" ]; then
  echo "go run ./graph/gen changed graph/: commit its output"; git status --porcelain -- graph; git diff --stat -- graph; exit 1
fi

echo "== deploy: Dockerfile lint, the image's go build, kustomize + kubeconform"
scripts/check-deploy.sh

echo "== go test -race (every package but the end-to-end suites)"
go test -race -count=1 -timeout 15m $(go list ./... | grep -v '/e2e$')

echo "== end to end (e2e/: the gateway binary as a process; alone, so that its"
echo "   latency and memory figures are not those of a machine busy with -race;"
echo "   the mixed-tenant soak at CI size is one of them: PAYGRAPH_SOAK=long for"
echo "   the large one; -v prints every suite's figures)"
PAYGRAPH_SOAK=ci go test -count=1 -timeout 20m -v ./e2e/

echo "== allocation budgets (without -race, which changes allocation counts)"
# Only the packages that have one: building every package's tests again
# without -race, to run nothing in most, is most of this step's time.
# (pipefail: a failing go test fails the script through the grep)
budgets=$(grep -rl --include='*_test.go' '^func Test[A-Za-z0-9_]*AllocationBudget' . | xargs -n1 dirname | sort -u)
if [ -z "$budgets" ]; then
  echo "no TestXxxAllocationBudget found"; exit 1
fi
go test -count=1 -run 'AllocationBudget' -v $budgets | grep -E 'allocs/op|^(---|ok|FAIL)'

echo "== fuzz (short; FUZZTIME=10m scripts/fuzz.sh for a long run)"
scripts/fuzz.sh
