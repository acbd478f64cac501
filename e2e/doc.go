// Package e2e holds the tests that run the gateway as its own process, as
// a pod runs it: the binary built once from the module root, its settings
// in the environment, a REST API on a real port, and nothing shared with
// the test but HTTP. Only what an operator can see is measured: answers,
// the process's memory (/proc), its /metrics and its log output. That is
// why the package is black-box (it imports paygraph/sandbox and the test
// helpers of paygraph/internal, and of paygraph/gateway only the constant
// GraphiQLExample, the one owner of the query GraphiQL opens with): a
// figure taken here is the figure a deployed gateway would show, whatever
// the packages inside it are called.
//
// The harness (harness_test.go, restfake_test.go) is shared by every suite
// in this folder, and builds the binary once per run for all of them:
// hostile_load_test.go is the hostile-load suite of issue 11
// (docs/reliability.md, "Hostile load"); soak_test.go the mixed-tenant soak
// (PAYGRAPH_SOAK=ci or long); hostile_test.go hostile clients one attack at
// a time; browser_test.go GraphiQL in headless Chromium against the
// sandbox-mode binary; replicas_test.go two replicas sharing a real
// redis-server; readme_examples_test.go, codegen_test.go and
// error_status_test.go hold README.md and docs/*.md to what the binary
// does (their examples, fixed ids, codegen recipe and error statuses, read
// from the files at test time).
//
// This file holds no code: the package is made of tests.
package e2e
