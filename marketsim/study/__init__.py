"""Studies: every (replicate, arm) unit seeded, run locally or on a cluster, checkpointed and
resumable in a run folder."""
