"""Executor side: what runs inside Spark tasks. Never imports driver modules (aggregation's
api, jobs, sessions, the entry points); the import contract in pyproject.toml checks it.

`steps` runs a job's steps on an Arrow batch, `tensors` converts tensor columns, `stats`
carries counts and failures back as data, `threads` sets the kernels' threads per task,
`storage` lists inputs and commits outputs (in one-task jobs), `piece_task` is the Arrow
engine's task."""
