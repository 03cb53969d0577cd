"""Developer tools that measure Flopsheet (accuracy, server latency, report speed); not installed."""
