"""Each game in its own package, all behind the protocol of ``engine.game``:

* ``mexican_train``: Mexican Train, every option of RULES.md section 2.
"""
