"""The mbox pipeline: framing a Takeout (or any) mbox file into segments, parsing them in worker processes, Takeout's
rules, and the import that writes them in order. Never imports the Gmail pipeline."""
