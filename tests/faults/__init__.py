"""Fault injection: each case runs against a real server process or socket that misbehaves
on purpose, and checks that the caller gets a specific ``MCPError`` within a bound (or the
right result), that nothing leaks (the autouse fixture in ``tests/conftest.py``), and that
the client is usable afterwards or reports itself closed.

``bench/reliability.py`` runs this package and tabulates what each case observed
(``docs/reliability.md``).
"""
