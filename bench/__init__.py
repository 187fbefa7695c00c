"""Benchmarks run by `make bench` (`python -m bench`): one `bench_*.py` module per benchmark, never run by tests."""
