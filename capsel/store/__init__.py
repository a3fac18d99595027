"""The one store of every method's results: keys, registration, progress, pending pages and whole-batch writes."""
