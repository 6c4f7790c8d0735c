"""The blinded judge: rubrics, blinding, verdicts, statistics, reports and adversarial verification."""
