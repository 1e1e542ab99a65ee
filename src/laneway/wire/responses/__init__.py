"""OpenAI's Responses API: a caller's request read, answers and stream events written."""
