"""Training code for the models ragate ships (not part of the ragate package)."""
