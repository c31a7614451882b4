# syntax=docker/dockerfile:1
# The logistics image: a static binary on distroless, run as a non-root user. Build it
# from the repository root, because go.work spans the modules:
#   docker build -f deploy/logistics.Dockerfile .
# GO_VERSION follows the go line of go.work (e2e/deploy checks that they agree).
ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION} AS build
WORKDIR /src
# Every module of go.work, so downloads are cached until a go.mod or go.sum changes.
COPY go.work go.work.sum ./
COPY pkg/integrationkit/go.mod pkg/integrationkit/go.sum pkg/integrationkit/
COPY migrations/go.mod migrations/
COPY docs/openapi/go.mod docs/openapi/
COPY finance/go.mod finance/go.sum finance/
COPY logistics/go.mod logistics/go.sum logistics/
COPY e2e/go.mod e2e/go.sum e2e/
RUN --mount=type=cache,target=/go/pkg/mod go mod download
# The sources, with .git so the go command stamps the revision `logistics version` prints.
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/logistics ./logistics/cmd/logistics

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/logistics /usr/local/bin/logistics
USER nonroot:nonroot
EXPOSE 8082
ENTRYPOINT ["/usr/local/bin/logistics"]
CMD ["serve"]
