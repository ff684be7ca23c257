"""Executor side: what runs inside Spark tasks. Never imports driver modules (aggregation's
api, jobs, sessions, the entry points); the import contract in .importlinter checks it.

`steps` runs a job's steps on an Arrow batch, `tensors` converts tensor columns (both
layouts), `stats` carries counts and failures back as data, `threads` sets the kernels'
threads per task, `storage` resolves paths, `reading` reads the input's Parquet files as
Spark reads them (listing, pieces, footers, types; for the driver and the tasks alike),
`commit` is the crash-safe commit (in one-task jobs), `piece_task` is the Arrow engine's
task, `faults` holds test-only pauses."""
