"""Event tables to tensors, in layers: `api` (driver side: `scatter_nd_agg`, `aggregate`,
the DataFrame plan) over `tasks` (executor side: the map-side combiner and the
reduce-side finisher) over `wire` (the shuffle rows both sides agree on) over `states`
(events checked and folded into order-free states)."""
