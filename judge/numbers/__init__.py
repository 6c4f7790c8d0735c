"""numbers.json's numbers, by the main path: the analysis, the statistics (`stats`), the judges' agreement, biases
and bias checks, and the judge's validity against gold. verify's second path decides them again."""
