"""The blinded judge: blinding, verdicts, statistics, the report and adversarial verification."""
