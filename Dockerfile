# idemcheck as a container image: a static binary on a distroless base (no
# shell, no package manager), running as an unprivileged user.
#
#   docker build -t idemcheck --build-arg VERSION=v1.2.3 --build-arg REVISION="$(git rev-parse HEAD)" .
#   docker run --rm idemcheck version
#   docker run --rm --network host --user "$(id -u):$(id -g)" -v "$PWD:/work" idemcheck \
#     run charges.yaml --target http://127.0.0.1:8080 --report junit=junit.xml --report html=report.html
#
# Reports written with --out and --report land in /work, the working
# directory: mount a directory there to keep them.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/idemcheck/idemcheck/cmd.Version=${VERSION}" \
      -o /out/idemcheck .

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="idemcheck" \
      org.opencontainers.image.description="Proves whether an HTTP API is idempotent: concurrent requests, injected faults, invariants checked against the real state." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="https://github.com/idemcheck/idemcheck"
COPY --from=build /out/idemcheck /usr/local/bin/idemcheck
USER nonroot:nonroot
WORKDIR /work
ENTRYPOINT ["/usr/local/bin/idemcheck"]
CMD ["--help"]
