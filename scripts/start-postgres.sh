#!/usr/bin/env bash
# Start a throwaway PostgreSQL server on 127.0.0.1 for the store tests (SPEC M3).
#
#   eval "$(scripts/start-postgres.sh)"      # exports TAO_TEST_DATABASE_URL
#   scripts/stop-postgres.sh                 # stops it and removes its files
#
# Uses the Debian `postgresql` package (apt-get install -y postgresql). The
# cluster lives in a fresh folder (PGDATA_DIR, default /tmp/tao-pg) owned by the
# `postgres` user, because the server refuses to run as root; nothing else on
# the machine is touched. It listens on 127.0.0.1 only, on PGPORT (default 55432),
# with a password for the `tao` role. The only thing printed on stdout is the
# export line, so `eval` is safe; progress goes to stderr.
set -euo pipefail

PGDATA_DIR=${PGDATA_DIR:-/tmp/tao-pg}
PGPORT=${PGPORT:-55432}
PGPASSWORD_TAO=${PGPASSWORD_TAO:-tao-test}

bindir=${PG_BINDIR:-}
if [[ -z "$bindir" ]]; then
    bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
fi
if [[ -z "$bindir" || ! -x "$bindir/initdb" ]]; then
    echo "start-postgres: no PostgreSQL server found; run: apt-get install -y postgresql" >&2
    exit 1
fi

as_postgres() {
    if [[ $(id -u) -eq 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

if [[ -d "$PGDATA_DIR/data" ]] && as_postgres "$bindir/pg_ctl" -D "$PGDATA_DIR/data" status >/dev/null 2>&1; then
    echo "start-postgres: already running in $PGDATA_DIR" >&2
else
    rm -rf "$PGDATA_DIR"
    mkdir -p "$PGDATA_DIR"
    if [[ $(id -u) -eq 0 ]]; then chown postgres: "$PGDATA_DIR"; fi
    as_postgres "$bindir/initdb" -D "$PGDATA_DIR/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
        --encoding=UTF8 --locale=C.UTF-8 >"$PGDATA_DIR/initdb.log" 2>&1 \
        || { cat "$PGDATA_DIR/initdb.log" >&2; exit 1; }
    # Loopback only, password auth over TCP; the socket stays in the cluster's folder.
    as_postgres "$bindir/pg_ctl" -D "$PGDATA_DIR/data" -l "$PGDATA_DIR/server.log" -w \
        -o "-c listen_addresses=127.0.0.1 -p $PGPORT -k $PGDATA_DIR -c fsync=off" start >&2 \
        || { cat "$PGDATA_DIR/server.log" >&2; exit 1; }
    as_postgres "$bindir/psql" -h "$PGDATA_DIR" -p "$PGPORT" -U postgres -v ON_ERROR_STOP=1 -q \
        -c "CREATE ROLE tao LOGIN CREATEDB PASSWORD '$PGPASSWORD_TAO'" \
        -c "CREATE DATABASE tao OWNER tao" >&2
fi

echo "export TAO_TEST_DATABASE_URL=postgresql://tao:$PGPASSWORD_TAO@127.0.0.1:$PGPORT/tao"
