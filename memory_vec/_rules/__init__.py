"""The pure rules: facts, owners, dates, conflicts, lifecycle, ranking, summary, context.

Functions and classes that take data and return decisions: no I/O, no backend,
no embedder call. They import only :mod:`memory_vec._model`. Private.
"""
