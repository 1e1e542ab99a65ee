"""OpenAI's wire formats: chat completions (laneway's neutral form) and embeddings."""
