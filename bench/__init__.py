"""Benchmarks: edgebayes side by side with River and MOA (not tests; see each script)."""
