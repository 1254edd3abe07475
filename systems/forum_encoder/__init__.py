"""A pretrained-encoder system for both forum tasks: a Hugging Face sentence encoder's post vectors,
mean-pooled over a sample's posts and projected by a head trained with a metric loss (after LUAR).

System names (registry): `episode_encoder` (darkweb) and `reddit_encoder` (reddit), two variants
of `systems.forum_encoder.system.ForumEncoder`. torch and transformers are imported by the modules
that need them, not here.
"""
