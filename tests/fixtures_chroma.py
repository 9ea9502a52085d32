"""Server fixtures for chroma (see tests/_services.py)."""
