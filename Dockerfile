# syntax=docker/dockerfile:1
# Multi-stage build: a static binary on a distroless, non-root base.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/paygraph .

FROM gcr.io/distroless/static-debian12:nonroot
LABEL org.opencontainers.image.title="paygraph" \
      org.opencontainers.image.description="GraphQL gateway for the Payment Records Read API"
COPY --from=build /out/paygraph /paygraph
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/paygraph"]
