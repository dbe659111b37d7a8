# syntax=docker/dockerfile:1
# fridge in a container (docs/deployment.md, "Docker"):
#   docker build -t fridge .
#   docker run -d --name fridge -p 11211:11211 -e FRIDGE_MEMORY=512MiB fridge
# Every option is a FRIDGE_* variable (FRIDGE_MEMORY, FRIDGE_WORKERS, FRIDGE_MAX_CONNECTIONS,
# FRIDGE_RESP_PORT, FRIDGE_ADMIN_PORT, FRIDGE_CONFIG=/etc/fridge/fridge.toml with a mounted
# file, …; `docker run --rm fridge --help` lists them) or a flag after the image name.

# --- build: the release binary, from the locked dependencies ---------------------------------
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p fridge-server --bin fridge \
    && install -D -m 755 target/release/fridge /out/fridge

# --- run: Debian's slim image (glibc, as the builder), the binary, a user without a shell -----
FROM debian:bookworm-slim
RUN useradd --system --user-group --uid 10001 --no-create-home --shell /usr/sbin/nologin fridge
COPY --from=build /out/fridge /usr/local/bin/fridge
COPY config/example.toml /etc/fridge/example.toml
# Listen on every interface of the container (fridge's own default is 127.0.0.1).
ENV FRIDGE_LISTEN=0.0.0.0 \
    FRIDGE_PORT=11211
USER fridge
EXPOSE 11211
# `fridge ping` sends memcached's `version` to 127.0.0.1:$FRIDGE_PORT and exits 0 on a reply.
HEALTHCHECK --interval=10s --timeout=5s --start-period=5s --retries=3 \
    CMD ["fridge", "ping", "--timeout", "2s"]
# SIGTERM (docker stop) is a graceful shutdown; fridge runs as PID 1 and starts no children.
STOPSIGNAL SIGTERM
ENTRYPOINT ["fridge"]
