"""A multi-headed character-level language model verifier in the spirit of Bagnall 2015 (`char_lm`)."""
