"""Forum data shared by the forum tasks (darkweb, reddit) and their systems: the post record, the
forum-posts reader and SYSML's pre-processing with its special tokens."""
