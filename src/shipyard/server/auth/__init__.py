"""Who is calling: passwords, token formats, the task tokens of trials, and the FastAPI
dependencies that turn a request into a principal (users and tokens live in services)."""
