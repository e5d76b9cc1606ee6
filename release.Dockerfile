# The release image: the binary GoReleaser built (static, stamped with its
# version) on the same distroless base as the Dockerfile's final stage.
# GoReleaser passes the OCI labels (version, revision, created, source).
FROM gcr.io/distroless/static-debian12:nonroot
LABEL org.opencontainers.image.title="idemcheck" \
      org.opencontainers.image.description="Proves whether an HTTP API is idempotent: concurrent requests, injected faults, invariants checked against the real state." \
      org.opencontainers.image.source="https://github.com/idemcheck/idemcheck"
COPY idemcheck /usr/local/bin/idemcheck
USER nonroot:nonroot
WORKDIR /work
ENTRYPOINT ["/usr/local/bin/idemcheck"]
CMD ["--help"]
