# The nodeprof image.
#   docker build -t nodeprof:0.1.0 .
# Build stage: Debian 12, then the Makefile targets (make deps-run: what a build needs; make).
# Runtime stage: Debian 12 slim with only the shared libraries the binary links (and
# ICU, which it dlopens when relabel rules need Unicode tables), the binary as
# entrypoint. The agent itself runs as root with hostPID and BPF (see
# charts/nodeprof); nothing in the image needs root: every file is world-readable and
# nothing is written at run time, so `nodeprof check`, `tools` and `--version` work for
# any user and under readOnlyRootFilesystem.
# `make docker-check` runs these steps in debootstrap roots (tests/chart/docker_check.py).

FROM debian:12 AS build
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update && apt-get install -y -q --no-install-recommends make ca-certificates
WORKDIR /src
COPY . .
RUN make deps-run && make -j"$(nproc)" all && mkdir -p /out && strip --strip-unneeded -o /out/nodeprof build/nodeprof

FROM debian:12-slim
ARG VERSION=0.1.0
ARG REVISION=unknown
# The Debian packages owning the libraries build/nodeprof links (readelf -d NEEDED,
# resolved with ldd and dpkg -S; tests/integration/test_chart.py checks this list) or
# dlopens (libicuuc, lib/icu.c), plus ca-certificates for pushing to https:// endpoints.
ARG RUNTIME_PACKAGES="\
    libbpf1 \
    libc6 \
    libcurl4 \
    libelf1 \
    libicu72 \
    libjansson4 \
    liblzma5 \
    libpcre2-8-0 \
    libssl3 \
    libwebsockets17 \
    libyaml-0-2 \
    zlib1g \
    ca-certificates"
LABEL org.opencontainers.image.title="nodeprof" \
      org.opencontainers.image.description="Kubernetes-native eBPF CPU profiler: samples every CPU's stacks, labels them with pods and containers, pushes pprof to Pyroscope" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.base.name="debian:12-slim"
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update && apt-get install -y -q --no-install-recommends $RUNTIME_PACKAGES && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/nodeprof /usr/local/bin/nodeprof
RUN chmod 0755 /usr/local/bin/nodeprof && install -d -m 0755 /etc/nodeprof && /usr/local/bin/nodeprof --version
# /metrics and health on the container's addresses; the UI, API and debug pages on its
# loopback (as the chart runs it).
EXPOSE 4101
ENTRYPOINT ["/usr/local/bin/nodeprof"]
CMD ["run", "--config", "/etc/nodeprof/config.alloy", "--http-listen", "127.0.0.1:4100", "--metrics-listen", "0.0.0.0:4101"]
