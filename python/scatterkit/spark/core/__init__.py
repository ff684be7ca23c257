"""The bottom layer: the exceptions every layer raises, the tensor column's element types
and struct, which kind of session a session is, and `cluster` (file work in a one-task job,
the cluster's parallelism). Imports nothing else of the package."""
