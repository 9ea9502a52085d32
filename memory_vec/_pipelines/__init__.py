"""Pipelines: what one call does, step by step (write, read, manage, transfer, maintain).

They apply the rules to the storage layer. Private; :class:`memory_vec.MemoryCore`
is their facade.
"""
