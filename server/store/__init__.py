"""All SQL: the database on SQLite or PostgreSQL (``db``), its migrations, and the rows of runs
and their event logs (``runlog``)."""
