# syntax=docker/dockerfile:1.7
#
# paygraph container image: a static Go binary on a distroless, non-root
# base (CA certificates and tzdata included, no shell, no package manager).
#
#   docker build -t paygraph:dev \
#     --build-arg VERSION=$(git describe --always) --build-arg REVISION=$(git rev-parse HEAD) .
#   docker run --rm -p 8080:8080 -e REST_BASE_URL=https://api.example.com/v1 paygraph:dev
#
# No Docker engine runs on the project's machines: scripts/check-deploy.sh
# checks this file and runs the same `go build` (flags below) in CI.

ARG GO_VERSION=1.26.8

# ---- build -------------------------------------------------------------
# Runs on the builder's own platform and cross-compiles (no emulation).
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-mod=readonly
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
ARG TARGETOS=linux
ARG TARGETARCH=amd64
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags='-s -w' -o /out/paygraph .

# ---- run ---------------------------------------------------------------
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="paygraph" \
      org.opencontainers.image.description="GraphQL gateway in front of the Payment Records Read API" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.base.name="gcr.io/distroless/static-debian12:nonroot"
COPY --from=build /out/paygraph /paygraph
# UID/GID 65532 ("nonroot" in distroless): numeric, so that Kubernetes'
# runAsNonRoot can verify it.
USER 65532:65532
EXPOSE 8080
ENV PORT=8080
# No shell or curl in the image: the binary probes its own /healthz
# (127.0.0.1:$PORT). Kubernetes ignores this and uses the Deployment's probes.
HEALTHCHECK --interval=10s --timeout=4s --start-period=5s --retries=3 \
    CMD ["/paygraph", "-healthcheck"]
ENTRYPOINT ["/paygraph"]
