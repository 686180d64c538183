"""Mirrorline: cross-cluster Apache Kafka replication on Apache Spark."""

__version__ = "0.1.0"
