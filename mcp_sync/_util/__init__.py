"""The package's own small tools, standard library only: server text made printable
(:mod:`.text`), the wire's JSON (:mod:`.jsonwire`), threads (:mod:`.threads`) and thread
pools (:mod:`.pool`), private files (:mod:`.files`), loopback hosts (:mod:`.hosts`).
"""
