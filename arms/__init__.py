"""Arms: the systems under test (base, trained, glue over either), and the collection of their answers."""
