"""Learned fusion of stylometric and context views of a forum sample (`episode_fusion`, `reddit_fusion`)."""
