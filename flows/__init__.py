"""Flows: the Prefect pipeline, the CLI and scheduling. The only package that imports prefect."""
