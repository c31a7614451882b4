# syntax=docker/dockerfile:1
# The Slack stand-in of the optional "slack" profile of compose.yaml (e2e/cmd/slackstandin):
#   docker build -f deploy/slack-standin.Dockerfile .
ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/slackstandin ./e2e/cmd/slackstandin

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/slackstandin /usr/local/bin/slackstandin
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/slackstandin"]
