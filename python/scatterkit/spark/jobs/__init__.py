"""The job (driver side): `run` (`run_job`, `transform`) plans against the input schema
(`plan`), picks an engine (`engine_arrow`, `engine_spark`; `aggregate_job` for an
aggregation on the Arrow engine), shows `progress` and sums up (`summary`); both engines
write through `output` (the one commit) and explain a failure through `failures`."""
