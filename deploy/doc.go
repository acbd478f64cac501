// Package deploy holds what ships the gateway: deploy/kubernetes (kustomize
// base and overlays), deploy/schemas (the Kubernetes JSON schemas
// kubeconform validates them against) and deploy/schemagen (which makes
// those). Its tests assert the Dockerfile's and the manifests' policy;
// scripts/check-deploy.sh runs them with the linters.
package deploy
