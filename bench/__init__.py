"""The benchmarks behind `make bench`. They report; they never fail a build."""
