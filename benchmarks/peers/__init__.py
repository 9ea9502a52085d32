"""memory-vec side by side with its peers: ``python -m benchmarks.peers.run``."""
