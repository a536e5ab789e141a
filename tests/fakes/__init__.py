"""Fakes shared by the tests and the benchmarks: real servers on 127.0.0.1, scripted answers."""
