"""numbers.json's numbers, by the main path: the analysis, each cell's counts (`cells`), each hypothesis decided
(`comparisons`), the statistics (`stats`), the judges' agreement, biases and bias checks, the judge's validity against
gold, stability and contamination, each returning its section's contract (core.records). verify's second path decides
them again."""
