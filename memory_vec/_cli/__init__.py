"""The ``memory-vec`` command and the offline demo (above the facade). Private."""
