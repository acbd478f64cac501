// Package deploy holds what ships the gateway and what operates it:
// deploy/kubernetes (kustomize base and overlays), deploy/helm/paygraph
// (the Helm chart, with the base's defaults), deploy/prometheus (the alerts
// as a rules file, and their promtool unit tests), deploy/grafana (the
// dashboard), deploy/schemas (the Kubernetes and Prometheus Operator JSON
// schemas kubeconform validates them against) and deploy/schemagen (which
// makes those). Its tests assert the Dockerfile's and the manifests'
// policy, and hold the chart, the base, the alerts file, the dashboard and
// docs/operations.md's helm commands to one another;
// scripts/check-deploy.sh runs them with the linters.
package deploy
