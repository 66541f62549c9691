"""Benchmarks: scripts run by `make bench`, not timed tests."""
