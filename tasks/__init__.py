"""Task adapters, one package per task family: pan, forum (shared by darkweb and reddit), darkweb, reddit, and
pairs (the `harness pairs` dataset builder). Tasks import core, harness and toolkit; systems may read a family's
records module (`tasks.<family>.records`) and nothing else of it."""
