#!/usr/bin/env bash
# A small, endless OLTP workload on the MySQL source so that the binlogs hold what binlake must handle: inserts,
# partial JSON updates (JSON_SET / JSON_REPLACE / JSON_REMOVE on the column itself, logged as
# PARTIAL_UPDATE_ROWS_EVENT with binlog_row_value_options=PARTIAL_JSON), plain updates, deletes and one DDL, every
# transaction compressed (binlog_transaction_compression=ON).
#
# Environment: MYSQL_HOST, MYSQL_DATABASE, MYSQL_USER, MYSQL_PASSWORD (required); WORKLOAD_INTERVAL seconds between
# rounds (default 2); WORKLOAD_ROUNDS (default 0: forever).
set -euo pipefail
: "${MYSQL_HOST:?}" "${MYSQL_DATABASE:?}" "${MYSQL_USER:?}" "${MYSQL_PASSWORD:?}"
interval="${WORKLOAD_INTERVAL:-2}"
rounds="${WORKLOAD_ROUNDS:-0}"

cnf=$(mktemp)
trap 'rm -f "$cnf"' EXIT
printf '[client]\nhost=%s\nuser=%s\npassword=%s\ndefault-character-set=utf8mb4\n' \
    "$MYSQL_HOST" "$MYSQL_USER" "$MYSQL_PASSWORD" > "$cnf"
sql() { mysql --defaults-extra-file="$cnf" --database="$MYSQL_DATABASE" --batch --skip-column-names "$@"; }

until sql -e 'SELECT 1' >/dev/null 2>&1; do
    echo "workload: waiting for MySQL at $MYSQL_HOST"
    sleep 2
done

sql <<'SQL'
CREATE TABLE IF NOT EXISTS orders (
  id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  customer    VARCHAR(64)     NOT NULL,
  amount      DECIMAL(12, 2)  NOT NULL,
  doc         JSON            NOT NULL,
  created_at  DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at  TIMESTAMP(6)    NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
SQL

round=0
while [ "$rounds" -eq 0 ] || [ "$round" -lt "$rounds" ]; do
    round=$((round + 1))
    # Documents of a few hundred bytes, so a small change is logged as a diff rather than a whole document.
    sql <<SQL
START TRANSACTION;
INSERT INTO orders (customer, amount, doc) VALUES
  (CONCAT('customer-', FLOOR(RAND() * 1000)), ROUND(RAND() * 500, 2),
   JSON_OBJECT('status', 'new', 'round', $round,
               'items', JSON_ARRAY(JSON_OBJECT('sku', 'A-1', 'qty', 1), JSON_OBJECT('sku', 'B-2', 'qty', 2)),
               'tags', JSON_ARRAY('web', 'promo', 'gift'),
               'address', JSON_OBJECT('city', 'Lisbon', 'zip', '1000-001'),
               'notes', REPEAT('binlake partial JSON workload. ', 10)));
COMMIT;
START TRANSACTION;
UPDATE orders SET doc = JSON_SET(doc, '$.status', 'paid', '$.paid_round', $round)
 WHERE JSON_EXTRACT(doc, '$.status') = 'new' ORDER BY id LIMIT 2;
UPDATE orders SET doc = JSON_REPLACE(doc, '$.items[0].qty', 1 + ($round % 9), '$.address.city', 'Porto')
 WHERE id = (SELECT id FROM (SELECT id FROM orders ORDER BY RAND() LIMIT 1) AS pick);
UPDATE orders SET doc = JSON_REMOVE(doc, '$.tags[0]')
 WHERE JSON_LENGTH(doc, '$.tags') > 1 ORDER BY id DESC LIMIT 1;
UPDATE orders SET amount = amount + 1 WHERE id = (SELECT id FROM (SELECT MIN(id) AS id FROM orders) AS first);
COMMIT;
SQL
    if [ $((round % 50)) -eq 0 ]; then
        sql -e "DELETE FROM orders WHERE JSON_EXTRACT(doc, '$.status') = 'paid' ORDER BY id LIMIT 5"
    fi
    if [ "$round" -eq 100 ] && [ "$(sql -e "SELECT COUNT(*) FROM information_schema.columns
            WHERE table_schema = DATABASE() AND table_name = 'orders' AND column_name = 'channel'")" = 0 ]; then
        sql -e "ALTER TABLE orders ADD COLUMN channel VARCHAR(16) NULL"     # a schema change mid-stream
    fi
    [ $((round % 100)) -eq 0 ] && echo "workload: $round rounds"
    sleep "$interval"
done
