#!/usr/bin/env bash
# Start Airflow (API server + UI, scheduler, DAG processor, triggerer; LocalExecutor) with binlake's DAGs and
# local settings (scripts/airflow_env.sh) on its PostgreSQL metadata database (scripts/airflow_postgres.sh: a
# private cluster in airflow/home/pg, installed with scripts/install_postgres.sh when missing):
# http://127.0.0.1:8080/ , user admin / password admin. Stop it with Ctrl-C (PostgreSQL stops with it).
#
#   bash scripts/airflow_standalone.sh                 # port 8080
#   AIRFLOW__API__PORT=8793 bash scripts/airflow_standalone.sh
#
# `airflow standalone` stops cleanly only on SIGINT: it runs with SIGINT reset to the default (a shell started in
# the background ignores SIGINT and the ignore would be inherited). A Ctrl-C reaches it from the terminal; a
# SIGTERM to this script is passed on to it as SIGINT. This script waits for it, then stops PostgreSQL.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/airflow_env.sh"
case "$AIRFLOW__DATABASE__SQL_ALCHEMY_CONN" in
  postgresql*127.0.0.1:"$BINLAKE_PG_PORT"/*)
    bash "$here/install_postgres.sh" >/dev/null
    started_pg=""
    bash "$here/airflow_postgres.sh" status || { bash "$here/airflow_postgres.sh" start; started_pg=1; }
    stop_pg() { if [ -n "$started_pg" ]; then bash "$here/airflow_postgres.sh" stop; fi; }
    trap stop_pg EXIT ;;
esac
airflow db migrate >/dev/null
python -c 'import os, signal; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp("airflow", ["airflow", "standalone"])' &
child=$!
trap ':' INT          # the terminal's Ctrl-C reaches airflow itself; wait for it to stop
trap 'kill -INT "$child" 2>/dev/null || true' TERM
while kill -0 "$child" 2>/dev/null; do
  wait "$child" || true
done
