#!/bin/sh
# The class database's container (deploy/postgres.Dockerfile): on first start, an empty data folder (the volume)
# gets a cluster, and in it the app's user (POSTGRES_USER, with POSTGRES_PASSWORD, not a superuser) owning the app's
# database (POSTGRES_DB); every start then runs PostgreSQL in the foreground, listening on every address of the
# container (the compose network; no port is published), a password (scram-sha-256) asked of every TCP client.
# Started as root, it gives the data folder to the user `postgres` and runs as that user.
# tests/deploy/test_postgres_image.py runs this script on the host's PostgreSQL (POSTGRES_BIN, PGPORT, PG_SOCKET_DIR).
set -eu

: "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD (deploy/compose.yaml: TE_DB_PASSWORD)}"
POSTGRES_USER=${POSTGRES_USER:-explorer}
POSTGRES_DB=${POSTGRES_DB:-classes}
PGDATA=${PGDATA:-/var/lib/postgresql/data}
POSTGRES_BIN=${POSTGRES_BIN:-/usr/local/lib/postgresql-bin}
PG_SOCKET_DIR=${PG_SOCKET_DIR:-/var/run/postgresql}
export PGDATA

if [ "$(id -u)" = 0 ]; then
    mkdir -p "$PGDATA" "$PG_SOCKET_DIR"
    chown postgres:postgres "$PGDATA" "$PG_SOCKET_DIR"
    chmod 700 "$PGDATA"
    exec setpriv --reuid=postgres --regid=postgres --init-groups sh "$0" "$@"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
    echo "postgres-entrypoint: first start: a new cluster in $PGDATA, user $POSTGRES_USER, database $POSTGRES_DB"
    # the superuser is the OS user, reached only through the socket inside the container (peer); over TCP every
    # client gives a password
    "$POSTGRES_BIN/initdb" -D "$PGDATA" -U "$(id -un)" -E UTF8 --no-locale --auth-local=peer \
        --auth-host=scram-sha-256 >/dev/null
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"  # initdb lets in loopback only
    # set up on the socket only: nothing on the network sees the cluster before its user exists
    "$POSTGRES_BIN/pg_ctl" -D "$PGDATA" -w -s -o "-c listen_addresses='' -k $PG_SOCKET_DIR" start
    # psql's variables quote the names and the password (:"name", :'text'), whatever characters they hold
    "$POSTGRES_BIN/psql" -h "$PG_SOCKET_DIR" -d postgres -q -v ON_ERROR_STOP=1 -v user="$POSTGRES_USER" \
        -v password="$POSTGRES_PASSWORD" -v db="$POSTGRES_DB" <<'SQL'
CREATE ROLE :"user" LOGIN PASSWORD :'password';
CREATE DATABASE :"db" OWNER :"user";
SQL
    "$POSTGRES_BIN/pg_ctl" -D "$PGDATA" -w -s -m fast stop
fi

exec "$POSTGRES_BIN/postgres" -D "$PGDATA" -c listen_addresses='*' -k "$PG_SOCKET_DIR" "$@"
