"""Altair chart builders, one function per paper figure; notebooks and jobs call them."""
