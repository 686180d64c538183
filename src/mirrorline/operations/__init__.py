"""What operators do to running flows: lifecycle, lists, positions, failover."""
