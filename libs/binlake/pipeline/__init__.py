"""The Spark-free pipeline of WL#6827: transactions, handler chain (reader | filter | applier), filters, file
identity and ordering key, bronze rows, the per-key fold."""
