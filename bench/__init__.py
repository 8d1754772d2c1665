"""The benchmarks, each a script (``python bench/<name>.py``). This file makes
bench/ a package for mypy only: without it, bench/engine.py and
bench/service.py would be typed as the top-level ``engine`` and ``service``
and shadow the packages they measure."""
