# The class database of deploy/compose.yaml: Debian's PostgreSQL on the same Debian base as the app's image (no
# registry needed beyond that base: BASE_IMAGE=local/debian-python, made by bench/docker_check.sh with debootstrap),
# with deploy/postgres-entrypoint.sh: on first start it makes the cluster in the volume and the app's user and
# database from POSTGRES_USER, POSTGRES_PASSWORD and POSTGRES_DB; then it serves on the compose network.
#   docker build -f deploy/postgres.Dockerfile -t transformer-explorer-postgres deploy
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
# postgresql-common first, told not to make Debian's default cluster (/var/lib/postgresql/<version>/main): the
# entrypoint makes the one cluster, in the volume, on first start. The binaries of whichever version the base's
# Debian release carries are linked to one versionless folder on the PATH.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends postgresql-common \
    && sed -ri 's/^#? *create_main_cluster *=.*$/create_main_cluster = false/' /etc/postgresql-common/createcluster.conf \
    && apt-get install -y --no-install-recommends postgresql \
    && rm -rf /var/lib/apt/lists/* \
    && ln -s "$(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -name bin | sort -V | tail -n 1)" /usr/local/lib/postgresql-bin \
    && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
    && chown postgres:postgres /var/lib/postgresql/data /var/run/postgresql && chmod 700 /var/lib/postgresql/data
ENV PATH=/usr/local/lib/postgresql-bin:$PATH PGDATA=/var/lib/postgresql/data
COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint.sh
VOLUME /var/lib/postgresql/data
EXPOSE 5432
# healthy once the server takes connections over TCP, not while the first start's setup runs on the socket only
HEALTHCHECK --interval=5s --timeout=3s --retries=20 CMD pg_isready -h 127.0.0.1 -p 5432 -q || exit 1
# SIGINT: PostgreSQL's fast shutdown (its default on SIGTERM waits for every client to leave)
STOPSIGNAL SIGINT
ENTRYPOINT ["sh", "/usr/local/bin/postgres-entrypoint.sh"]
