"""The SQL store: schema, migrations, the job queue."""
