"""The reader: data, model, training, export (see MODEL_CARD.md)."""
