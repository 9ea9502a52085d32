"""Storage: the Store that owns one collection's parts, and the writer and keyword index.

Sits on the public extension points :mod:`memory_vec.backends`,
:mod:`memory_vec.state` and :mod:`memory_vec.embeddings`. Private.
"""
