"""Anthropic's Messages API: requests read and written, answers and stream events both ways."""
