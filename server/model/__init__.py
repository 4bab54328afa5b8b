"""Models: the model loop (``loop``), the conversation a model is sent (``conversation``),
compaction, the catalog of models, the tools, and the provider adapters (``providers``)."""
