#!/usr/bin/env bash
# Stop the throwaway server of scripts/start-postgres.sh and remove its files.
set -euo pipefail

PGDATA_DIR=${PGDATA_DIR:-/tmp/tao-pg}
bindir=${PG_BINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)}

if [[ -f "$PGDATA_DIR/data/postmaster.pid" ]]; then
    if [[ $(id -u) -eq 0 ]]; then
        runuser -u postgres -- "$bindir/pg_ctl" -D "$PGDATA_DIR/data" -m fast -w stop >&2 || true
    else
        "$bindir/pg_ctl" -D "$PGDATA_DIR/data" -m fast -w stop >&2 || true
    fi
fi
rm -rf "$PGDATA_DIR"
