"""Each game in its own package, all behind the protocol of ``engine.game``:

* ``mexican_train``: Mexican Train, every option of RULES.md section 2.
* ``line``: the line-of-play games of RULES.md 3.1-3.3 (Block, Draw, All
  Fives, Bergen, Matador, and the 2v2 teams of Block, Draw and All Fives),
  one state parameterized by game.
"""
