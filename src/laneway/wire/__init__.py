"""Wire formats: each one written once, both directions, as pure functions over bytes and values.

One package (or module) per format: OpenAI's chat completions and embeddings
(``openai``), Anthropic's Messages API (``anthropic``), Gemini's
``generateContent`` (``gemini``), OpenAI's Responses API (``responses``) and
Mistral's OCR (``mistral_ocr``). Each reads and writes requests, answers and
stream events, so the server's dialects (a caller's format) and the provider
adapters (a source's format) share one definition of every shape.

Pure: core only, no I/O, no clock (a writer that stamps a time is given it).
OpenAI's chat shape is laneway's neutral form (``ChatRequest`` messages, the
``raw`` of an answer), so the other formats may import ``wire.openai``, and
``wire.blocks`` (an answer as the blocks Anthropic and Responses write); they
are otherwise independent of each other (import-linter contracts).
"""
