"""Estimates while a first scan runs in random order: the pure estimator and the read of the sample it needs."""
