# syntax=docker/dockerfile:1

# The base images. CI, which cannot pull images, builds stand-ins for both from Debian packages
# (container/standins.sh) and passes them here; everyone else gets these.
ARG RUST_IMAGE=rust:1-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot

# ---- chef: Rust toolchain + cargo-chef, shared by planner and builder ----
FROM ${RUST_IMAGE} AS chef
RUN cargo install cargo-chef --locked --version 0.1.78
WORKDIR /app

# ---- planner: compute the dependency recipe from the manifests ----
FROM chef AS planner
COPY . .
RUN cargo chef prepare --recipe-path recipe.json

# ---- builder: build dependencies (cached layer), then the binary ----
FROM chef AS builder
COPY --from=planner /app/recipe.json recipe.json
RUN cargo chef cook --release --locked --recipe-path recipe.json
COPY . .
RUN cargo build --release --locked --bin tablegraph \
    && mkdir -p /out/data

# ---- runtime: distroless, no shell, runs as nonroot (uid 65532) ----
FROM ${RUNTIME_IMAGE} AS runtime
WORKDIR /app
COPY --from=builder /app/target/release/tablegraph /usr/local/bin/tablegraph
COPY schema.graphql /app/schema.graphql
COPY slots.lock /app/slots.lock
COPY resolvers/ /app/resolvers/
COPY migrations/ /app/migrations/
COPY --from=builder --chown=nonroot:nonroot /out/data /app/data
ENV TABLEGRAPH_LISTEN=0.0.0.0:8080 \
    TABLEGRAPH_DATA_DIR=/app/data
USER 65532:65532
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/tablegraph", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/tablegraph"]
CMD ["serve"]
