"""A turn before its stream: the request's checks and the rows it creates (``start``), and the
context it measures (``context``)."""
