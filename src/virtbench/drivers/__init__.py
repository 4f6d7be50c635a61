"""Tool drivers: one module per real tool — its argv, its output parser, its health verdicts.

Kept apart from `workloads/`, which holds only the test cases that register and compose
these drivers (as PerfKitBenchmarker keeps `linux_packages` apart from `linux_benchmarks`).
A driver registers nothing; the test case decides what to run and how to label it.
"""
