"""The data model: config, records, scope, errors, traces and the input checks.

The lowest layer: it imports nothing else of memory-vec. Private; the public
names are re-exported by :mod:`memory_vec`.
"""
