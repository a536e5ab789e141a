"""What a run is made of, as plain typed data: settings, checkpoint, steps, usage and budget."""
