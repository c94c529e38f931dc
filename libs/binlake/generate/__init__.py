"""The deterministic MySQL 8 workload generator: binlogs, SDI of every table version, and ground truth."""
