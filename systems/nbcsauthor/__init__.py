"""SYSML's episode encoder with NBC-Softmax and other metric losses (systems.nbcsauthor.system), and an
episode TF-IDF baseline (systems.nbcsauthor.tfidf). Nothing is imported here: torch loads only when a
neural system is used."""
