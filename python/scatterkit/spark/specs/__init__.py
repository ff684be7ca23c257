"""What a job asks for, checked and immutable: the job spec (`job_spec`), its aggregation
(`agg_spec`) and constant inputs (`constant`). Plain data, pickled into the tasks."""
