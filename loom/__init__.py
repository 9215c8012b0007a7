"""Loom: raw corpora to training mixtures, every step inspectable."""

__version__ = "0.1.0"
