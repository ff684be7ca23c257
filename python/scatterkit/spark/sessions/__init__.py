"""Sessions and clusters: `session` builds a classic or Spark Connect session, `pack` builds
the executors' environment archive, `artifacts` ships the library to a Connect server."""
