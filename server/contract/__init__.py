"""What every room may use: the API's error answer (``errors.ApiError``) and JSON read within
limits (``jsonio``)."""
