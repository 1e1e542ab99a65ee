"""CLI layer: ``laneway serve | sim | check``; the composition root of the process."""
