"""Datasets, windowing, selection rules and audio input validation."""
