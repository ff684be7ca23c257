"""The choices a user names, in one place: the API checks them, the CLI offers them. Nothing
heavy is imported here, so that ``scatterkit-spark --help`` stays instant."""

ON_ERROR = ("fail", "keep")  # a bad row: stop everything, or keep its message
AGG_ON_ERROR = ("fail", "keep", "drop")  # a bad event: stop, null the group's tensor, skip it
ENGINES = ("auto", "arrow", "spark")  # who reads and writes a job's Parquet
LAYOUTS = ("arrays", "binary")  # how a tensor column is laid out (core.element_types)
LOG_LEVELS = ("OFF", "FATAL", "ERROR", "WARN", "INFO", "DEBUG")  # Spark's own
