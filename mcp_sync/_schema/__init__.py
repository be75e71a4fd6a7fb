"""A sandbox for a server's JSON Schemas: a tool result checked against the tool's
``outputSchema`` within bounds (:mod:`.checker`), and the linear-time matcher that runs
the schema's patterns (:mod:`.pattern`). Nothing a schema names is fetched or opened.
"""
