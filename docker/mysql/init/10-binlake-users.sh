# Sourced (not executed: keep this file's mode 0644) by the mysql image's entrypoint on the first start (empty
# datadir), after MYSQL_USER and MYSQL_DATABASE were created: the binlog shipper's account. REPLICATION SLAVE/CLIENT
# to stream binlogs (binlake fetch), RELOAD for the shipper's periodic FLUSH BINARY LOGS (so a day's transactions
# are in closed files soon after midnight).
# shellcheck shell=bash disable=SC2154
docker_process_sql --database=mysql <<SQL
CREATE USER IF NOT EXISTS '${BINLAKE_REPL_USER}'@'%' IDENTIFIED BY '${BINLAKE_REPL_PASSWORD}';
GRANT REPLICATION SLAVE, REPLICATION CLIENT, RELOAD ON *.* TO '${BINLAKE_REPL_USER}'@'%';
SQL
