"""Models and calls: every backend behind one protocol, model files (found, hashed, quantised, LoRA),
the spec types a backend is opened from, the call cache, the retry rule and provider batch APIs."""
