"""Machinery that systems share; it imports core and harness only (tests/test_layers.py).

The calibrated-verifier base (verifier) and its abstain band (calibration), leak-free splits (splits), a
checkpoint-safe logistic regression (logistic), TF-IDF (tfidf), checkpoints (checkpoint) and the migration of
older checkpoint parameters (legacy), the shell of the neural forum systems (parts_system), pretrained encoders
(pretrained), batched encoding (encoding), a disk cache of per-text arrays (feature_store), metric-learning
losses and batches (metric_losses, metric_batches), the one training loop (training), devices and mixed
precision (devices), DDP under torchrun (distributed), threads and memory (memory), embedding similarity
(retrieval) and exact nearest-neighbour search (nearest). Seeding is the framework's: harness.seeding.
"""
