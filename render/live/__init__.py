"""`physarum live`: the running simulation in a browser page, its changes recorded as a preset."""
