"""Gemini's ``generateContent``: requests written, answers and stream events read."""
