"""Machinery that systems share: TF-IDF, score calibration, checkpoints, devices and mixed precision,
distributed training, seeding, retrieval by embedding similarity, and one training loop."""
