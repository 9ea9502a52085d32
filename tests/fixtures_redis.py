"""Server fixtures for redis (see tests/_services.py)."""
