"""What every stage stands on: the errors a user sees, the checks every input file passes, files written whole or not at all, and the signals that stop a render."""
