"""Command-line tools beside the server: ``users`` (password accounts) and ``proxy`` (the
round-robin proxy in front of several workers)."""
