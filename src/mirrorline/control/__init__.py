"""Driver-side control loops of a flow: topics, configs, checkpoints, heartbeats, metadata."""
