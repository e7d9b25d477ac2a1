"""What is read off a trace: readouts (slices and statistics the API shows), head scores, the logit lens, ablation."""
