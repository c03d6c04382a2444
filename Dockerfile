# weir in a container, from the Debian package (make package):
#
#   docker build -t weir .
#   docker run --rm weir --version
#   docker run -d --name jm -p 8081:8081 -v /path/to/secret:/etc/weir/secret:ro weir \
#     jobmanager --config /etc/weir/weir.toml --bind 0.0.0.0:6123 --secret-file /etc/weir/secret
#
# The first stage builds the package, the second installs it into a slim
# Debian 12 with the shared libraries it depends on.
FROM debian:12 AS build
WORKDIR /src
COPY . .
RUN apt-get update -qq \
 && make package BUILD_DIR=/build JOBS="$(nproc)" \
 && mkdir /out && cp /build/weir_*.deb /out/

FROM debian:12-slim
COPY --from=build /out/ /tmp/weir/
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends /tmp/weir/weir_*.deb \
 && rm -rf /var/lib/apt/lists/* /tmp/weir \
 && rm -f /etc/weir/secret
# 6123: TaskManager sessions; 8081: REST API and web UI; 9250: a
# TaskManager's Prometheus metrics.
EXPOSE 6123 8081 9250
ENTRYPOINT ["weir"]
CMD ["--help"]
