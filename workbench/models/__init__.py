"""Backends behind the decoding protocols: targets, drafters, producers, converters, registry.

Heavy imports (torch, transformers) live in the submodules, so importing this package is cheap.
"""
