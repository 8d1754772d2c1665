"""Bots measured against bots: ``railyard ladder`` and the arena's own bots.

* :mod:`service.ladder.pool`: the ladder's tables, its games on the engine,
  and the ratings (openskill's Plackett-Luce model) with the head-to-head
  table;
* :mod:`service.ladder.remote`: its games through a running service, where
  remote programs play their seats through the API;
* :mod:`service.ladder.module_bots`: ``module:function`` bots, as
  ``railyard-bot --module`` takes them, for the arena and the ladder.
"""
