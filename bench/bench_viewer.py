"""Viewer latency benchmark (filled in below)."""
