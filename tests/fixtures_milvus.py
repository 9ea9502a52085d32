"""Server fixtures for milvus (see tests/_services.py)."""
