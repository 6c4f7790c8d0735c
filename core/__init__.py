"""The ground floor: the error vocabulary (exit 2 / exit 1), atomic writes, the append-only JSONL rule,
every raw record's contract, and the native-crash supervisor. It imports no other package."""
