"""Trace collection and the on-disk schema (parquet via polars)."""
