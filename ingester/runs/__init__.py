"""The run machinery: the session (lock, migrate), a run row's life from start to end, the heartbeat, the reporter,
signals and the viewer's run requests. It knows no pipeline: pipelines raise `RunCancelled` and report through it."""
