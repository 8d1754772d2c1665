"""Mexican Train (RULES.md section 2): its rules type and presets
(``rules``), the game (``game``), its views (``view``) and the positions its
expert searches (``determinize``)."""
