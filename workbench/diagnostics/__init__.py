"""Diagnostics behind the paper's motivation figures (Appendix B)."""
