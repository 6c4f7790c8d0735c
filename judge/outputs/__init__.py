"""What a results folder is rendered into: report.md, review.md, the review page (and the join it shows), the plots
and the export table. The templates are in templates/."""
