# shellcheck shell=bash
# Airflow settings for running binlake's DAGs locally. Source it:  . scripts/airflow_env.sh
#
# AIRFLOW_HOME      airflow/home/ in the checkout (git-ignored): logs, passwords file, pg/ (the metadata database)
# Metadata DB       PostgreSQL: a private cluster in $BINLAKE_PG_DIR (default $AIRFLOW_HOME/pg) on
#                   127.0.0.1:$BINLAKE_PG_PORT (default 54320), database/user/password airflow, started by
#                   scripts/airflow_postgres.sh (airflow_standalone.sh does it); LocalExecutor
# DAGs              dags/ of the checkout; no example DAGs
# UI and REST API   http://127.0.0.1:${AIRFLOW__API__PORT:-8080}/ ; simple auth manager, user admin / admin
# spark_default     local[*] through the venv's spark-submit (AIRFLOW_CONN_SPARK_DEFAULT); point the connection
#                   at a cluster (host spark://..., yarn, k8s://...) to run the same DAG there
# Lake and landing  BINLAKE_LANDING / BINLAKE_LAKE (defaults: sample/landing, sample/lake; see
#                   libs/binlake/orchestration/config.py)
# Every variable already set in the environment wins.

BINLAKE_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export BINLAKE_REPO
export AIRFLOW_HOME="${AIRFLOW_HOME:-$BINLAKE_REPO/airflow/home}"
export AIRFLOW__CORE__DAGS_FOLDER="${AIRFLOW__CORE__DAGS_FOLDER:-$BINLAKE_REPO/dags}"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__PARALLELISM="${AIRFLOW__CORE__PARALLELISM:-4}"
export AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG="${AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG:-4}"
export BINLAKE_PG_DIR="${BINLAKE_PG_DIR:-$AIRFLOW_HOME/pg}"
export BINLAKE_PG_PORT="${BINLAKE_PG_PORT:-54320}"
export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN="${AIRFLOW__DATABASE__SQL_ALCHEMY_CONN:-postgresql+psycopg2://airflow:airflow@127.0.0.1:$BINLAKE_PG_PORT/airflow}"
export AIRFLOW__CORE__EXECUTOR="${AIRFLOW__CORE__EXECUTOR:-LocalExecutor}"
export AIRFLOW__CORE__AUTH_MANAGER=airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager
export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS="${AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS:-admin:admin}"
export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE="$AIRFLOW_HOME/simple_auth_manager_passwords.json"
export AIRFLOW__API__HOST="${AIRFLOW__API__HOST:-127.0.0.1}"
export AIRFLOW__API__PORT="${AIRFLOW__API__PORT:-8080}"
export AIRFLOW__API__BASE_URL="http://$AIRFLOW__API__HOST:$AIRFLOW__API__PORT"
export AIRFLOW__CORE__EXECUTION_API_SERVER_URL="$AIRFLOW__API__BASE_URL/execution/"
export AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL="${AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL:-30}"
if [ -z "${AIRFLOW_CONN_SPARK_DEFAULT:-}" ]; then
    export AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "local[*]", "extra": {"deploy-mode": "client", "spark-binary": "spark-submit"}}'
fi
export PATH="$BINLAKE_REPO/.venv/bin:$PATH"
export PYSPARK_PYTHON="${PYSPARK_PYTHON:-$BINLAKE_REPO/.venv/bin/python}"
export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
export BINLAKE_LANDING="${BINLAKE_LANDING:-$BINLAKE_REPO/sample/landing}"
export BINLAKE_LAKE="${BINLAKE_LAKE:-$BINLAKE_REPO/sample/lake}"

mkdir -p "$AIRFLOW_HOME"
if [ ! -s "$AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE" ]; then
    # the known local login (admin / admin); the simple auth manager only generates passwords it lacks
    printf '{"admin": "admin"}\n' > "$AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"
fi
