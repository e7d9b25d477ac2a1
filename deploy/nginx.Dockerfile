# The proxy of deploy/compose.yaml: nginx from Debian, on the same Debian base as the app's image where there is
# one (BASE_IMAGE=local/debian-python, made by bench/docker_check.sh), with deploy/nginx.conf baked in.
#   docker build -f deploy/nginx.Dockerfile -t transformer-explorer-proxy deploy
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends nginx-light \
    && rm -rf /var/lib/apt/lists/* \
    && ln -sf /dev/stdout /var/log/nginx/access.log && ln -sf /dev/stderr /var/log/nginx/error.log
# (no `nginx -t` here: it resolves the upstream `explorer`, which exists only inside the compose network)
COPY nginx.conf /etc/nginx/nginx.conf
EXPOSE 8080
STOPSIGNAL SIGQUIT
CMD ["nginx", "-g", "daemon off;"]
