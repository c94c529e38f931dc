"""The logic behind binlake's Airflow DAGs (``dags/``), kept out of the DAG files so they stay wiring only.

Modules: :mod:`config` (settings: landing, lake, sources, Spark connection; from the environment with
defaults), :mod:`tasks` (what each task does), :mod:`dq_history` (the data-quality report across runs).
Importing this package imports neither Airflow nor Spark.
"""
