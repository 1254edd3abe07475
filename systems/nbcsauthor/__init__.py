"""SYSML's episode encoder with NBC-Softmax and other metric losses (systems.nbcsauthor.system). Nothing
is imported here: torch loads only when the system is used."""
