#!/usr/bin/env bash
# Start Airflow (API server + UI, scheduler, DAG processor, triggerer) with binlake's DAGs and local settings
# (scripts/airflow_env.sh): http://127.0.0.1:8080/ , user admin / password admin. Stop it with Ctrl-C.
#
#   bash scripts/airflow_standalone.sh                 # port 8080
#   AIRFLOW__API__PORT=8793 bash scripts/airflow_standalone.sh
#
# `airflow standalone` stops cleanly only on SIGINT. A shell started in the background ignores SIGINT and the
# ignore would be inherited through exec, so the handler is reset to the default before exec.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/airflow_env.sh"
airflow db migrate >/dev/null
exec python -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp("airflow", ["airflow", "standalone"])'
