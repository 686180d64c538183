"""Helpers shared by the test suites (real Kafka, no fakes)."""
