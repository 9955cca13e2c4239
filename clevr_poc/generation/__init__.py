"""Benchmark generation: environments, scenes, layouts and questions (paper §3)."""
