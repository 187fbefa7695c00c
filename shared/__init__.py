"""Code both services share: models, engines, migrations, the ingest lock, run records, sender rules.

It must not import `ingester` or `viewer`.
"""
